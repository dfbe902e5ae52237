/**
 * The pods the kubelet runs (runtime.ts's PodRun, by uid) and what every part of the kubelet does to
 * one: timers that fire only while the run is current and die with it, status writes coalesced per pod
 * with its port listeners (pod-ports.ts) following each change at once, and the containers' Events.
 */
import type { Context } from './context.js';
import type { EventType } from './events.js';
import { PodPorts } from './pod-ports.js';
import { WorkQueue } from './queue.js';
import { type ContainerRun, type PodRun, buildStatus } from './runtime.js';

export class PodRuns {
  private readonly byUid = new Map<string, PodRun>();
  private readonly ports: PodPorts;
  private readonly statusQueue: WorkQueue;

  constructor(
    private readonly ctx: Context,
    servePods: boolean,
  ) {
    this.ports = new PodPorts(
      servePods,
      (run) => this.isCurrent(run),
      (...event) => {
        this.event(...event);
      },
    );
    this.statusQueue = new WorkQueue('kubelet status', ctx.timers, (uid) => {
      this.writeStatus(uid);
    });
  }

  get(uid: string): PodRun | undefined {
    return this.byUid.get(uid);
  }

  add(run: PodRun): void {
    this.byUid.set(run.uid, run);
  }

  delete(uid: string): void {
    this.byUid.delete(uid);
  }

  /** Whether run is still the run of its pod (not forgotten, nor replaced). */
  isCurrent(run: PodRun): boolean {
    return this.byUid.get(run.uid) === run;
  }

  /** Runs fn after ms, unless the run is no longer current by then. */
  after(run: PodRun, ms: number, where: string, fn: () => void): void {
    const h = this.ctx.timers.after(ms, `kubelet ${where} ${run.namespace}/${run.name}`, () => {
      if (h) run.timers.delete(h);
      if (!this.isCurrent(run)) return;
      fn();
    });
    if (h) run.timers.add(h);
  }

  clearTimers(run: PodRun): void {
    for (const h of run.timers) this.ctx.timers.cancel(h);
    run.timers.clear();
  }

  /** Status writes are coalesced per pod: several steps in one turn make one write. Listeners follow at once. */
  sync(run: PodRun): void {
    this.serve(run);
    this.statusQueue.add(run.uid);
  }

  /** Opens and closes the run's port listeners to match its state. */
  serve(run: PodRun): void {
    this.ports.serve(run);
  }

  /** Writes the pod's status now. */
  writeStatus(uid: string): void {
    const run = this.byUid.get(uid);
    if (!run) return;
    const { store, types } = this.ctx;
    const pod = store.get(types.pods, run.namespace, run.name);
    if (!pod || pod.metadata.uid !== uid) return;
    const status = buildStatus(run, pod, this.ctx.now());
    store.replace(types.pods, { ...pod, status: structuredClone(status) }, { subresource: 'status' });
  }

  event(run: PodRun, c: ContainerRun, type: EventType, reason: string, message: string): void {
    const pod = this.ctx.store.get(this.ctx.types.pods, run.namespace, run.name);
    if (!pod || pod.metadata.uid !== run.uid) return;
    const fieldPath = `spec.${c.init ? 'initContainers' : 'containers'}{${c.name}}`;
    this.ctx.recorder.record(pod, type, reason, message, { component: 'kubelet', host: run.node }, fieldPath);
  }

  /** Closes every listener (the simulator stops): resolves once their ports are free. */
  async stop(): Promise<void> {
    await this.ports.stop(this.byUid.values());
  }
}
