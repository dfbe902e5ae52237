/**
 * How a container's run ends, after the failure conventions of SIM_ENV: crash and fail exits, OOM kills
 * (137, OOMKilled), probe kills of never-healthy containers (Unhealthy, Killing, 137), and the exit of a
 * Job's or init container; then the terminated state with its termination message, or a restart after
 * a CrashLoopBackOff whose back-off doubles up to its cap and resets after a long clean run.
 */
import { logExit, terminationMessage } from './container-logs.js';
import type { Context } from './context.js';
import type { ImagePulls } from './image-pulls.js';
import type { PodRuns } from './pod-runs.js';
import type { ContainerStateTerminated } from './pods.js';
import { timestamp } from './pods.js';
import { type ContainerRun, type PodRun, goDuration, podPhase } from './runtime.js';

export class ContainerExits {
  constructor(
    private readonly ctx: Context,
    private readonly runs: PodRuns,
    /** Restarts go through the pull, as the kubelet's do. */
    private readonly pulls: ImagePulls,
    /** Starts the pod's next init container, or its app containers once init is done. */
    private readonly nextStep: (run: PodRun) => void,
  ) {}

  /**
   * Plays out the run's SIM_ENV behaviour: crash, OOM kill, failure, a probe kill (never-healthy), or a
   * Job's or init container's completion; a long-running container of a restartPolicy Always pod runs on.
   * `live` tells whether this run of the container is still running.
   */
  schedule(run: PodRun, c: ContainerRun, startedMs: number, live: () => boolean): void {
    const b = this.ctx.behaviour;
    const { behaviour, runMs, exitCode } = c.sim;
    const longRunning = !c.init || c.sidecar;
    const exit = (ms: number, code: number, oom = false) => {
      this.runs.after(run, ms, 'exit', () => {
        if (live()) this.exit(run, c, code, oom, startedMs);
      });
    };
    if (behaviour === 'crash') exit(runMs ?? b.crashAfterMs, exitCode ?? 1);
    else if (behaviour === 'oom') exit(runMs ?? b.crashAfterMs, 137, true);
    else if (behaviour === 'fail') exit(runMs ?? b.jobRunMs, exitCode ?? 1);
    else if (behaviour === 'never-healthy') {
      this.runs.after(run, runMs ?? b.crashAfterMs, 'exit', () => {
        if (live()) this.probeKill(run, c, startedMs);
      });
    } else if (!longRunning || (run.restartPolicy !== 'Always' && !c.sidecar))
      exit(runMs ?? b.jobRunMs, exitCode ?? 0);
  }

  private exit(run: PodRun, c: ContainerRun, exitCode: number, oom: boolean, startedMs: number): void {
    const b = this.ctx.behaviour;
    const finishedMs = this.ctx.now();
    const reason = oom ? 'OOMKilled' : exitCode === 0 ? 'Completed' : 'Error';
    const logs = logExit(this.ctx, c, exitCode, oom);
    const terminated: ContainerStateTerminated = {
      containerID: c.containerID ?? '',
      exitCode,
      finishedAt: timestamp(finishedMs),
      reason,
      startedAt: c.state.running?.startedAt ?? timestamp(startedMs),
    };
    const message = terminationMessage(c, exitCode, logs);
    if (message) terminated.message = message;
    c.ready = false;
    c.started = false;

    const restart =
      c.sidecar ||
      (run.restartPolicy === 'Always' && !c.init) ||
      (run.restartPolicy !== 'Never' && exitCode !== 0);
    if (!restart) {
      c.state = { terminated };
      if (c.init) {
        if (exitCode === 0) {
          c.done = true;
          this.nextStep(run);
        } else {
          run.initFailed = true;
        }
      }
      this.runs.sync(run);
      if (podPhase(run) === 'Succeeded' || podPhase(run) === 'Failed') this.runs.clearTimers(run);
      return;
    }
    // Clean running for a while resets the back-off, as kubelet does after 10 minutes (2 × its 5 min cap).
    if (finishedMs - startedMs > 2 * b.backoffMaxMs) c.crashBackoffMs = b.backoffBaseMs;
    const wait = Math.min(c.crashBackoffMs, b.backoffMaxMs);
    c.restartCount++;
    c.lastState = { terminated };
    const podRef = `${run.name}_${run.namespace}(${run.uid})`;
    c.state = {
      waiting: {
        reason: 'CrashLoopBackOff',
        message: `back-off ${goDuration(wait)} restarting failed container=${c.name} pod=${podRef}`,
      },
    };
    this.runs.event(
      run,
      c,
      'Warning',
      'BackOff',
      `Back-off restarting failed container ${c.name} in pod ${podRef}`,
    );
    this.runs.sync(run);
    this.runs.after(run, wait, 'restart', () => {
      c.crashBackoffMs = Math.min(wait * 2, this.ctx.behaviour.backoffMaxMs);
      this.pulls.launch(run, c);
    });
  }

  /**
   * A container whose startup (else liveness) probe never passes, killed as the kubelet does: its
   * `Unhealthy` event (prober.go: `<Kind> probe failed: <output>`, nothing listening), then `Killing`
   * (kuberuntime_manager.go), then exit 137 and a restart. Without either probe it just stays unready.
   */
  private probeKill(run: PodRun, c: ContainerRun, startedMs: number): void {
    const kind = c.spec.startupProbe ? 'startup' : c.spec.livenessProbe ? 'liveness' : undefined;
    const probe = c.spec.startupProbe ?? c.spec.livenessProbe;
    if (!kind || !probe) return;
    const port = String(probe.httpGet?.port ?? probe.tcpSocket?.port ?? '');
    const dial = `dial tcp ${run.ip}:${port}: connect: connection refused`;
    const output = probe.httpGet
      ? `Get "http://${run.ip}:${port}${probe.httpGet.path ?? '/'}": ${dial}`
      : dial;
    const Kind = kind === 'startup' ? 'Startup' : 'Liveness';
    this.runs.event(run, c, 'Warning', 'Unhealthy', `${Kind} probe failed: ${output}`);
    this.runs.event(
      run,
      c,
      'Normal',
      'Killing',
      `Container ${c.name} failed ${kind} probe, will be restarted`,
    );
    this.exit(run, c, 137, false, startedMs);
  }
}
