/**
 * The scheduler: binds pending pods to a node with room for their cpu/memory requests, or marks them
 * Unschedulable with a FailedScheduling event worded as kube-scheduler's, and retries them with back-off
 * and whenever capacity is freed. Node usage is kept incrementally from pod events, so scheduling a pod
 * costs O(nodes), not O(pods).
 */
import { bindPod } from '../api-server.js';
import type { StoreEvent } from '../store.js';
import type { KubeObject } from '../types.js';
import type { Context } from './context.js';
import type { Nodes } from './nodes.js';
import {
  type PodCondition,
  isTerminal,
  key,
  podRequests,
  podSpec,
  podStatus,
  splitKey,
  timestamp,
} from './pods.js';
import { parseQuantity } from './quantity.js';
import { WorkQueue } from './queue.js';
import type { Timer } from './timers.js';

const SCHEDULER = { component: 'default-scheduler' };
/** kube-scheduler's pod back-off: 1 s doubling to 10 s. */
const RETRY_BASE_MS = 1_000;
const RETRY_MAX_MS = 10_000;
/** Capacity freed by many pods at once triggers one retry round, not one per pod. */
const RETRY_ALL_DEBOUNCE_MS = 50;

interface Usage {
  cpu: number;
  memory: number;
  pods: number;
}

export class Scheduler {
  private readonly queue: WorkQueue;
  private readonly usage = new Map<string, Usage>();
  /** pod uid → what it adds to its node's usage */
  private readonly counted = new Map<string, { node: string; cpu: number; memory: number }>();
  /** pod key → failed attempts so far */
  private readonly unschedulable = new Map<string, number>();
  private retryAllTimer: Timer | undefined;

  constructor(
    private readonly ctx: Context,
    private readonly nodes: Nodes,
  ) {
    this.queue = new WorkQueue('scheduler', ctx.timers, (k) => {
      this.schedule(k);
    });
  }

  onPod(e: StoreEvent): void {
    const pod = e.object;
    const spec = podSpec(pod);
    this.account(e);
    const k = key(pod.metadata.namespace, pod.metadata.name);
    if (e.type === 'DELETED') {
      this.unschedulable.delete(k);
      return;
    }
    if (spec.nodeName || pod.metadata.deletionTimestamp || isTerminal(pod)) {
      this.unschedulable.delete(k);
      return;
    }
    if ((spec.schedulerName ?? 'default-scheduler') !== 'default-scheduler') return;
    // Our own Unschedulable status writes come back as MODIFIED: the retry timer owns those pods.
    if (e.type === 'ADDED' || !this.unschedulable.has(k)) {
      this.queue.addAfter(k, this.ctx.jittered(this.ctx.behaviour.scheduleDelayMs));
    }
  }

  onNode(): void {
    this.retryUnschedulableSoon();
  }

  /** Keeps per-node usage: pods bound to a node and not finished hold their requests. */
  private account(e: StoreEvent): void {
    const pod = e.object;
    const uid = pod.metadata.uid;
    const node = podSpec(pod).nodeName;
    const holds = e.type !== 'DELETED' && !!node && !isTerminal(pod);
    const was = this.counted.get(uid);
    if (was && (!holds || was.node !== node)) {
      const u = this.usageOf(was.node);
      u.cpu -= was.cpu;
      u.memory -= was.memory;
      u.pods -= 1;
      this.counted.delete(uid);
      this.retryUnschedulableSoon();
    }
    if (holds && node && !this.counted.has(uid)) {
      const req = podRequests(podSpec(pod));
      const u = this.usageOf(node);
      u.cpu += req.cpu;
      u.memory += req.memory;
      u.pods += 1;
      this.counted.set(uid, { node, cpu: req.cpu, memory: req.memory });
    }
  }

  private usageOf(node: string): Usage {
    let u = this.usage.get(node);
    if (!u) {
      u = { cpu: 0, memory: 0, pods: 0 };
      this.usage.set(node, u);
    }
    return u;
  }

  private retryUnschedulableSoon(): void {
    if (this.retryAllTimer || this.unschedulable.size === 0) return;
    this.retryAllTimer = this.ctx.timers.after(RETRY_ALL_DEBOUNCE_MS, 'scheduler retry', () => {
      this.retryAllTimer = undefined;
      for (const k of this.unschedulable.keys()) this.queue.add(k);
    });
  }

  private schedule(k: string): void {
    const { store, types } = this.ctx;
    const { namespace, name } = splitKey(k);
    const pod = store.get(types.pods, namespace, name);
    const spec = pod ? podSpec(pod) : undefined;
    if (!pod || !spec || spec.nodeName || pod.metadata.deletionTimestamp || isTerminal(pod)) {
      this.unschedulable.delete(k);
      return;
    }
    const req = podRequests(spec);
    const fits: { node: string; score: number; pods: number }[] = [];
    const reasons = new Map<string, number>();
    let total = 0;
    for (const nodeName of this.nodes.names) {
      const node = store.get(types.nodes, undefined, nodeName);
      if (!node) continue;
      total++;
      const failed = this.filter(node, spec.nodeSelector, req);
      if (failed.length === 0) {
        const alloc = allocatable(node);
        const u = this.usageOf(nodeName);
        // LeastAllocated: prefer the node left with the largest free share of cpu and memory.
        const free = (cap: number, used: number) => (cap > 0 ? (cap - used) / cap : 1);
        const score = (free(alloc.cpu, u.cpu + req.cpu) + free(alloc.memory, u.memory + req.memory)) / 2;
        fits.push({ node: nodeName, score, pods: u.pods });
      }
      for (const r of failed) reasons.set(r, (reasons.get(r) ?? 0) + 1);
    }
    if (fits.length > 0) {
      fits.sort((a, b) => b.score - a.score || a.pods - b.pods);
      const best = fits.filter((f) => f.score === fits[0]?.score && f.pods === fits[0]?.pods);
      const chosen = best[Math.floor(this.ctx.random() * best.length)] ?? fits[0];
      if (!chosen) return;
      bindPod(store, types.pods, pod, chosen.node);
      this.unschedulable.delete(k);
      this.ctx.recorder.record(
        pod,
        'Normal',
        'Scheduled',
        `Successfully assigned ${k} to ${chosen.node}`,
        SCHEDULER,
      );
      return;
    }
    const detail = [...reasons.entries()].map(([r, n]) => `${n} ${r}`).sort();
    const message = `0/${total} nodes are available${detail.length ? `: ${detail.join(', ')}` : ''}.`;
    this.markUnschedulable(pod, message);
    const attempts = (this.unschedulable.get(k) ?? 0) + 1;
    this.unschedulable.set(k, attempts);
    this.queue.addAfter(k, Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (attempts - 1)));
  }

  /** The reasons of the first filter plugin that rejects the node, as the scheduler framework reports them. */
  private filter(
    node: KubeObject,
    selector: Record<string, string> | undefined,
    req: { cpu: number; memory: number },
  ): string[] {
    const nodeSpec = (node['spec'] ?? {}) as { unschedulable?: boolean };
    if (nodeSpec.unschedulable) return ['node(s) were unschedulable'];
    const labels = node.metadata.labels ?? {};
    if (selector && Object.entries(selector).some(([k, v]) => labels[k] !== v)) {
      return ["node(s) didn't match Pod's node affinity/selector"];
    }
    const alloc = allocatable(node);
    const u = this.usageOf(node.metadata.name);
    const out: string[] = [];
    if (req.cpu > 0 && u.cpu + req.cpu > alloc.cpu + 1e-9) out.push('Insufficient cpu');
    if (req.memory > 0 && u.memory + req.memory > alloc.memory) out.push('Insufficient memory');
    return out;
  }

  private markUnschedulable(pod: KubeObject, message: string): void {
    const { store, types } = this.ctx;
    const status = structuredClone(podStatus(pod));
    const previous = status.conditions?.find((c) => c.type === 'PodScheduled');
    const cond: PodCondition = {
      type: 'PodScheduled',
      status: 'False',
      lastProbeTime: null,
      lastTransitionTime:
        previous?.status === 'False' && previous.lastTransitionTime
          ? previous.lastTransitionTime
          : timestamp(this.ctx.now()),
      reason: 'Unschedulable',
      message,
    };
    status.conditions = [...(status.conditions ?? []).filter((c) => c.type !== 'PodScheduled'), cond];
    store.replace(types.pods, { ...pod, status }, { subresource: 'status' });
    this.ctx.recorder.record(pod, 'Warning', 'FailedScheduling', message, SCHEDULER);
  }
}

function allocatable(node: KubeObject): { cpu: number; memory: number } {
  const status = (node['status'] ?? {}) as { allocatable?: Record<string, unknown> };
  return {
    cpu: parseQuantity(status.allocatable?.['cpu']) ?? 0,
    memory: parseQuantity(status.allocatable?.['memory']) ?? 0,
  };
}
