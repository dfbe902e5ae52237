/**
 * The simulated nodes: `kubesim-node-<i>` Node objects with the capacity of `behaviour.nodes`, a Ready
 * condition refreshed by a heartbeat (as kwok's node-heartbeat stage), and each node's pod address range,
 * a slice of the simulator's loopback pod range 127.R.0.0/16 (pod-range.ts).
 */
import { serverVersion } from '../discovery.js';
import type { PodRange } from '../pod-range.js';
import type { KubeObject } from '../types.js';
import type { Context } from './context.js';
import { timestamp } from './pods.js';

/** kubelet's --node-status-update-frequency is 10 s; kwok's heartbeat stage uses 20–25 s. */
const HEARTBEAT_MS = 20_000;
const HEARTBEAT_JITTER_MS = 5_000;

export interface SimNode {
  name: string;
  index: number;
  hostIP: string;
  /** First third octet of the node's slice of the pod range 127.R.0.0/16, and the slice's size in /24s. */
  octetBase: number;
  octetCount: number;
}

export class Nodes {
  readonly byName = new Map<string, SimNode>();
  /** Pod IPs per node, handed out lowest first and reused once the pod is gone. */
  private readonly used = new Map<string, Set<string>>();
  private readonly cursor = new Map<string, number>();

  constructor(
    private readonly ctx: Context,
    readonly podRange: PodRange,
  ) {
    const count = Math.max(0, Math.min(256, Math.floor(ctx.behaviour.nodes.count)));
    // Each node gets a power-of-two block of /24s, so its podCIDR is a single CIDR as kube-controller-manager's.
    const octetCount = count > 0 ? 2 ** Math.floor(Math.log2(256 / count)) : 0;
    for (let i = 0; i < count; i++) {
      const name = `kubesim-node-${i}`;
      const n = i + 2;
      this.byName.set(name, {
        name,
        index: i,
        hostIP: `172.18.${Math.floor(n / 256)}.${n % 256}`,
        octetBase: i * octetCount,
        octetCount,
      });
      this.used.set(name, new Set());
      this.cursor.set(name, 0);
    }
  }

  get names(): string[] {
    return [...this.byName.keys()];
  }

  /** Creates the Node objects that are missing and starts their heartbeat. */
  start(): void {
    for (const node of this.byName.values()) this.ensure(node);
    this.scheduleHeartbeat();
  }

  allocateIP(nodeName: string): string | undefined {
    const node = this.byName.get(nodeName);
    const used = this.used.get(nodeName);
    if (!node || !used) return undefined;
    const size = node.octetCount * 254;
    let c = this.cursor.get(nodeName) ?? 0;
    for (let tries = 0; tries < size; tries++, c = (c + 1) % size) {
      const ip = `127.${this.podRange.octet}.${node.octetBase + Math.floor(c / 254)}.${(c % 254) + 1}`;
      // The range's claim socket listens on 127.R.255.254: no pod gets that address.
      if (!used.has(ip) && ip !== this.podRange.claimAddress) {
        used.add(ip);
        this.cursor.set(nodeName, (c + 1) % size);
        return ip;
      }
    }
    return undefined;
  }

  releaseIP(nodeName: string, ip: string): void {
    this.used.get(nodeName)?.delete(ip);
  }

  private podCIDR(node: SimNode): string {
    const prefix = 24 - Math.log2(Math.max(1, node.octetCount));
    return `127.${this.podRange.octet}.${node.octetBase}.0/${prefix}`;
  }

  private ensure(node: SimNode): void {
    const { store, types } = this.ctx;
    const shape = this.ctx.behaviour.nodes;
    let current = store.get(types.nodes, undefined, node.name);
    if (!current) {
      const cidr = this.podCIDR(node);
      current = store.create(types.nodes, {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name: node.name,
          uid: '',
          resourceVersion: '',
          creationTimestamp: '',
          labels: {
            'beta.kubernetes.io/arch': 'amd64',
            'beta.kubernetes.io/os': 'linux',
            'kubernetes.io/arch': 'amd64',
            'kubernetes.io/hostname': node.name,
            'kubernetes.io/os': 'linux',
          },
          annotations: {
            'node.alpha.kubernetes.io/ttl': '0',
            'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
          },
        },
        spec: { podCIDR: cidr, podCIDRs: [cidr] },
      });
    }
    const now = timestamp(this.ctx.now());
    const resources = {
      cpu: shape.cpu,
      'ephemeral-storage': shape.ephemeralStorage,
      'hugepages-1Gi': '0',
      'hugepages-2Mi': '0',
      memory: shape.memory,
      pods: String(shape.pods),
    };
    const cond = (type: string, status: string, reason: string, message: string) => ({
      type,
      status,
      lastHeartbeatTime: now,
      lastTransitionTime: now,
      reason,
      message,
    });
    const next = structuredClone(current);
    next['status'] = {
      capacity: resources,
      allocatable: resources,
      conditions: [
        cond(
          'MemoryPressure',
          'False',
          'KubeletHasSufficientMemory',
          'kubelet has sufficient memory available',
        ),
        cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        cond('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        cond('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      ],
      addresses: [
        { type: 'InternalIP', address: node.hostIP },
        { type: 'Hostname', address: node.name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        architecture: 'amd64',
        bootID: uuidLike(this.ctx.random),
        containerRuntimeVersion: 'containerd://1.7.15',
        kernelVersion: '6.8.0-kubesim',
        kubeProxyVersion: serverVersion(this.ctx.store.minorVersion).gitVersion,
        kubeletVersion: serverVersion(this.ctx.store.minorVersion).gitVersion,
        machineID: hex(this.ctx.random, 32),
        operatingSystem: 'linux',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
        systemUUID: uuidLike(this.ctx.random),
      },
    };
    store.replace(types.nodes, next, { subresource: 'status' });
  }

  private scheduleHeartbeat(): void {
    this.ctx.timers.after(HEARTBEAT_MS + this.ctx.random() * HEARTBEAT_JITTER_MS, 'node heartbeat', () => {
      for (const node of this.byName.values()) this.heartbeat(node);
      this.scheduleHeartbeat();
    });
  }

  private heartbeat(node: SimNode): void {
    const { store, types } = this.ctx;
    const current = store.get(types.nodes, undefined, node.name);
    if (!current) {
      this.ensure(node);
      return;
    }
    const next: KubeObject = structuredClone(current);
    const status = (next['status'] ?? {}) as { conditions?: Record<string, unknown>[] };
    const now = timestamp(this.ctx.now());
    for (const c of status.conditions ?? []) c['lastHeartbeatTime'] = now;
    store.replace(types.nodes, next, { subresource: 'status' });
  }
}

function hex(random: () => number, n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += Math.floor(random() * 16).toString(16);
  return out;
}

function uuidLike(random: () => number): string {
  const h = hex(random, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
