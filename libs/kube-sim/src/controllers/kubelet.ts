/**
 * The simulated kubelet of every `kubesim-node-<i>`: admits bound pods, moves them through kwok-like
 * stages (pull, create, start, ready) on jittered timers, init containers first, and stops and removes
 * pods being deleted after their drain and grace times. Its parts: pod-runs.ts (the runs, their timers,
 * status writes and Events), image-pulls.ts (pulls and pull back-off), container-exits.ts (SIM_ENV's
 * failure conventions, crash loops), container-logs.ts (the log buffers and pods/log) and pod-ports.ts
 * (the containers' ports answering HTTP at the pod's loopback IP).
 */
import { rmSync } from 'node:fs';
import type { LogRequest } from '../api-server.js';
import type { StoreEvent } from '../store.js';
import type { KubeObject } from '../types.js';
import { ContainerExits } from './container-exits.js';
import { podLogDir } from './container-log.js';
import { type LogWrite, type PodLogRead, logSigterm, podLogs, startLog, writeLog } from './container-logs.js';
import type { Context } from './context.js';
import { ImagePulls } from './image-pulls.js';
import type { Nodes } from './nodes.js';
import { drainTime } from './pod-ports.js';
import { PodRuns } from './pod-runs.js';
import { isTerminal, key, podSpec, splitKey, timestamp } from './pods.js';
import { WorkQueue } from './queue.js';
import { type ContainerRun, type PodRun, imageIdOf, newContainerRun } from './runtime.js';

export interface KubeletOptions {
  /** Containers listen on their declared ports (default true); off: pods have IPs but nothing answers. */
  servePods?: boolean;
}

export class Kubelet {
  private readonly runs: PodRuns;
  private readonly pulls: ImagePulls;
  private readonly exits: ContainerExits;
  private readonly podQueue: WorkQueue;

  constructor(
    private readonly ctx: Context,
    private readonly nodes: Nodes,
    options: KubeletOptions = {},
  ) {
    this.runs = new PodRuns(ctx, options.servePods ?? true);
    this.pulls = new ImagePulls(ctx, this.runs, (run, c) => {
      this.start(run, c);
    });
    this.exits = new ContainerExits(ctx, this.runs, this.pulls, (run) => {
      this.nextStep(run);
    });
    this.podQueue = new WorkQueue('kubelet', ctx.timers, (k) => {
      this.reconcile(k);
    });
  }

  onPod(e: StoreEvent): void {
    const pod = e.object;
    if (e.type === 'DELETED') {
      this.forget(pod.metadata.uid);
      return;
    }
    const node = podSpec(pod).nodeName;
    if (!node || !this.nodes.byName.has(node)) return;
    const run = this.runs.get(pod.metadata.uid);
    // Our own status writes come back here too: only a new pod or a new deletion needs the kubelet.
    if (run && (run.terminating || !pod.metadata.deletionTimestamp)) return;
    // Like a real kubelet, which learns of its pods through a watch, act on a later turn (after the binder).
    this.podQueue.add(key(pod.metadata.namespace, pod.metadata.name));
  }

  private reconcile(k: string): void {
    const { namespace, name } = splitKey(k);
    const pod = this.ctx.store.get(this.ctx.types.pods, namespace, name);
    const node = pod ? podSpec(pod).nodeName : undefined;
    if (!pod || !node || !this.nodes.byName.has(node)) return;
    let run = this.runs.get(pod.metadata.uid);
    if (!run) {
      // A pod that finished before we saw it (the simulator restarted on a kept store) stays as it is.
      if (isTerminal(pod)) return;
      run = this.admit(pod, node);
    }
    if (pod.metadata.deletionTimestamp && !run.terminating) this.kill(run, pod);
  }

  private admit(pod: KubeObject, node: string): PodRun {
    const spec = podSpec(pod);
    const base = this.ctx.behaviour.backoffBaseMs;
    const run: PodRun = {
      uid: pod.metadata.uid,
      namespace: pod.metadata.namespace ?? '',
      name: pod.metadata.name,
      node,
      restartPolicy: spec.restartPolicy ?? 'Always',
      init: (spec.initContainers ?? []).map((c) => newContainerRun(c, true, base)),
      containers: (spec.containers ?? []).map((c) => newContainerRun(c, false, base)),
      nextInit: 0,
      initialized: false,
      initFailed: false,
      ip: this.nodes.allocateIP(node),
      hostIP: this.nodes.byName.get(node)?.hostIP ?? '',
      startTime: timestamp(this.ctx.now()),
      timers: new Set(),
      terminating: false,
      drained: false,
      transitions: new Map(),
    };
    if (run.init.length > 0) {
      for (const c of run.containers) c.state = { waiting: { reason: 'PodInitializing' } };
    }
    this.runs.add(run);
    this.runs.sync(run);
    if (!pod.metadata.deletionTimestamp) this.nextStep(run);
    return run;
  }

  /** Starts the next init container, or, once they are done, every app container. */
  private nextStep(run: PodRun): void {
    const c = run.init[run.nextInit];
    if (c) {
      run.nextInit++;
      this.pulls.launch(run, c);
      return;
    }
    if (run.initialized) return;
    run.initialized = true;
    for (const app of run.containers) {
      app.state = { waiting: { reason: 'ContainerCreating' } };
      this.pulls.launch(run, app);
    }
    this.runs.sync(run);
  }

  private start(run: PodRun, c: ContainerRun): void {
    const b = this.ctx.behaviour;
    const startedMs = this.ctx.now();
    const id = `containerd://${this.hex(64)}`;
    c.containerID = id;
    if (!c.imageID) c.imageID = imageIdOf(c.image);
    const pod = c.sim.printEnv ? this.ctx.store.get(this.ctx.types.pods, run.namespace, run.name) : undefined;
    startLog(this.ctx, run, c, pod);
    c.state = { running: { startedAt: timestamp(startedMs) } };
    c.started = true;
    // A new run of the container binds its ports afresh (sync → serve).
    c.bindFailed.clear();
    this.runs.event(run, c, 'Normal', 'Created', `Created container ${c.name}`);
    this.runs.event(run, c, 'Normal', 'Started', `Started container ${c.name}`);
    this.runs.sync(run);

    const live = () => c.containerID === id && c.state.running !== undefined;
    const { behaviour } = c.sim;
    const longRunning = !c.init || c.sidecar;
    const healthy = behaviour !== 'never-ready' && behaviour !== 'never-healthy';
    if (longRunning && healthy && !c.sim.crashOnStart) {
      this.runs.after(run, this.ctx.jittered(b.readyDelayMs), 'ready', () => {
        if (!live()) return;
        c.ready = true;
        this.runs.sync(run);
      });
    }
    this.exits.schedule(run, c, startedMs, live);
    if (c.sim.logEveryMs > 0) {
      let n = 0;
      const tick = (): void => {
        if (!live()) return;
        c.logs?.write('stdout', `kubesim: ${run.name} ${c.name} line ${++n}`);
        this.runs.after(run, c.sim.logEveryMs, 'log line', tick);
      };
      this.runs.after(run, c.sim.logEveryMs, 'log line', tick);
    }

    if (c.sidecar) {
      // A sidecar counts as done for init ordering once it has started.
      c.done = true;
      this.nextStep(run);
    }
  }

  /**
   * Graceful deletion: SIGTERM the containers; those serving ports keep answering for their drain time
   * (an app draining its connections), then stop; the pod is removed once every container stopped (the
   * kubelet's final delete, grace 0). Both within the grace period.
   */
  private kill(run: PodRun, pod: KubeObject): void {
    run.terminating = true;
    this.runs.clearTimers(run);
    const b = this.ctx.behaviour;
    let drainMs = 0;
    for (const c of [...run.init, ...run.containers]) {
      if (!c.state.running) continue;
      this.runs.event(run, c, 'Normal', 'Killing', `Stopping container ${c.name}`);
      logSigterm(c);
      drainMs = Math.max(drainMs, drainTime(c, b.drainMs));
    }
    const grace = pod.metadata.deletionGracePeriodSeconds ?? podSpec(pod).terminationGracePeriodSeconds ?? 30;
    const graceMs = Math.max(0, grace) * 1000;
    const drainedMs = Math.min(drainMs, graceMs);
    const stoppedMs = Math.max(Math.min(this.ctx.jittered(b.terminationDelayMs), graceMs), drainedMs);
    if (drainedMs < stoppedMs) {
      this.runs.after(run, drainedMs, 'drained', () => {
        this.drained(run);
      });
    }
    this.runs.after(run, stoppedMs, 'remove', () => {
      this.drained(run);
      this.remove(run);
    });
  }

  /** The drain time of a pod being deleted is over: its ports stop answering. */
  private drained(run: PodRun): void {
    run.drained = true;
    this.runs.serve(run);
  }

  private remove(run: PodRun): void {
    const { store, types } = this.ctx;
    const pod = store.get(types.pods, run.namespace, run.name);
    if (!pod || pod.metadata.uid !== run.uid) return;
    if (pod.metadata.finalizers?.length) {
      // The pod outlives its containers until its finalizers go: report them stopped meanwhile.
      const now = timestamp(this.ctx.now());
      for (const c of [...run.init, ...run.containers]) {
        if (!c.state.running) continue;
        c.state = {
          terminated: {
            containerID: c.containerID ?? '',
            exitCode: 0,
            finishedAt: now,
            reason: 'Completed',
            startedAt: c.state.running.startedAt,
          },
        };
        c.ready = false;
        c.started = false;
      }
      this.runs.serve(run);
      this.runs.writeStatus(run.uid);
    }
    store.delete(types.pods, run.namespace, run.name, {
      gracePeriodSeconds: 0,
      preconditions: { uid: run.uid },
    });
  }

  private forget(uid: string): void {
    const run = this.runs.get(uid);
    if (!run) return;
    this.runs.clearTimers(run);
    this.runs.delete(uid);
    for (const c of [...run.init, ...run.containers]) c.logs?.end();
    // The kubelet removes a gone pod's log files once its containers are collected.
    const files = this.ctx.behaviour.podLogFiles;
    if (files) {
      const dir = podLogDir(files.dir, run.namespace, run.name, run.uid);
      this.ctx.timers.after(files.retainMs, 'pod log files', () => {
        rmSync(dir, { recursive: true, force: true });
      });
    }
    // Its ports close before its address can go to another pod.
    this.runs.serve(run);
    if (run.ip) this.nodes.releaseIP(run.node, run.ip);
  }

  /** Closes every listener (the simulator stops): resolves once their ports are free. */
  async stop(): Promise<void> {
    await this.runs.stop();
  }

  private hex(n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += Math.floor(this.ctx.random() * 16).toString(16);
    return out;
  }

  /** The pods/log subresource (container-logs.ts). */
  logs(req: LogRequest): PodLogRead {
    return podLogs(this.ctx, req, (uid) => this.runs.get(uid));
  }

  /** Lines a test asks a running container to write (container-logs.ts). */
  writeLog(req: LogWrite): number {
    return writeLog(this.ctx, req, (uid) => this.runs.get(uid));
  }
}
