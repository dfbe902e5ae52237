/**
 * The kubelet's HTTP listeners (pod-http.ts) for the declared TCP ports of its pods' containers: opened
 * while a container runs in a Running pod, closed when it stops, when the pod's drain time after
 * deletion is over, when the pod is forgotten, or when the simulator stops, which awaits their closing.
 */
import type { EventType } from './events.js';
import { PortListener } from './pod-http.js';
import { tcpPorts } from './pods.js';
import { type ContainerRun, type PodRun, podPhase } from './runtime.js';

/** Records a container's Event, as the kubelet does. */
export type ContainerEvent = (
  run: PodRun,
  c: ContainerRun,
  type: EventType,
  reason: string,
  message: string,
) => void;

export class PodPorts {
  private stopped = false;
  /** Listeners being closed, awaited by stop(). */
  private readonly closing = new Set<Promise<void>>();

  constructor(
    /** Containers listen on their declared ports; off: pods have IPs but nothing answers. */
    private readonly servePods: boolean,
    /** Whether run is still the kubelet's run of its pod. */
    private readonly isCurrent: (run: PodRun) => boolean,
    private readonly event: ContainerEvent,
  ) {}

  /**
   * Opens and closes the pod's listeners to match its state: each declared TCP port of a running
   * container answers while the pod is Running (and, when deleted, until its drain time is over). A port
   * that cannot be bound gets a Warning Event and is not tried again for this run of the container.
   */
  serve(run: PodRun): void {
    const current = !this.stopped && this.isCurrent(run);
    const podRunning = current && !run.drained && run.ip !== undefined && podPhase(run) === 'Running';
    for (const c of [...run.init, ...run.containers]) {
      const listening = podRunning && this.servePods && c.sim.listens && c.state.running !== undefined;
      if (!listening) {
        this.closeListeners(c);
        continue;
      }
      for (const port of tcpPorts(c.spec)) {
        if (c.listeners.has(port) || c.bindFailed.has(port) || run.ip === undefined) continue;
        const host = run.ip;
        const containerID = c.containerID;
        const listener = new PortListener(run, host, port, (err) => {
          if (c.listeners.get(port) === listener) c.listeners.delete(port);
          // The container may have restarted meanwhile: the failure belongs to the run that tried.
          if (c.containerID !== containerID) return;
          c.bindFailed.add(port);
          this.event(
            run,
            c,
            'Warning',
            'PortBindFailed',
            `Failed to serve port ${port} of container ${c.name} on ${host}:${port}: ${err.message}`,
          );
        });
        c.listeners.set(port, listener);
      }
    }
  }

  private closeListeners(c: ContainerRun): void {
    for (const listener of c.listeners.values()) {
      const closed = listener.close();
      this.closing.add(closed);
      void closed.then(() => this.closing.delete(closed));
    }
    c.listeners.clear();
  }

  /** Closes the listeners of every run (the simulator stops): resolves once their ports are free. */
  async stop(runs: Iterable<PodRun>): Promise<void> {
    this.stopped = true;
    for (const run of runs) this.serve(run);
    await Promise.all([...this.closing]);
  }
}

/** How long a container being deleted keeps answering on its ports (0: it serves none). */
export function drainTime(c: ContainerRun, defaultMs: number): number {
  if (!c.sim.listens || tcpPorts(c.spec).length === 0) return 0;
  return c.sim.drainMs ?? Math.max(0, defaultMs);
}
