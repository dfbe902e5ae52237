/**
 * The Job controller, after upstream's job_controller.go: runs `parallelism` pods at a time until
 * `completions` succeed, replaces failed pods with back-off until failures pass `backoffLimit`, enforces
 * `activeDeadlineSeconds`, honours `suspend`, and deletes finished Jobs after `ttlSecondsAfterFinished`
 * (the TTL-after-finished controller's part).
 */
import { StatusError } from '../errors.js';
import type { KubeObject } from '../types.js';
import type { Context } from './context.js';
import { isActive, isReady, isTerminal, omitZero, podStatus, splitKey, timestamp } from './pods.js';
import { KeyedController } from './queue.js';
import { type ReplicaSetSpec, createGeneratedPod, deletionOrder, ownedPods } from './replicaset.js';

const SOURCE = { component: 'job-controller' };
const BURST = 500;

interface JobSpec {
  parallelism?: number;
  completions?: number | null;
  backoffLimit?: number;
  activeDeadlineSeconds?: number;
  ttlSecondsAfterFinished?: number;
  suspend?: boolean;
  template?: ReplicaSetSpec['template'] & { spec?: { restartPolicy?: string } };
}

interface JobCondition {
  type: string;
  status: 'True' | 'False';
  lastProbeTime: string;
  lastTransitionTime: string;
  reason?: string;
  message?: string;
}

interface JobStatus {
  conditions?: JobCondition[];
  startTime?: string;
  completionTime?: string;
  active?: number;
  ready?: number;
  succeeded?: number;
  failed?: number;
  terminating?: number;
  uncountedTerminatedPods?: Record<string, never>;
}

/** What the controller remembers of a Job between syncs (upstream keeps this in the status and pod finalizers). */
interface JobMemory {
  counted: Set<string>;
  lastFailureMs: number | undefined;
  startedMs: number | undefined;
  finishedMs: number | undefined;
}

function finishedCondition(status: JobStatus): JobCondition | undefined {
  return status.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
}

export class JobController extends KeyedController {
  private readonly memory = new Map<string, JobMemory>();

  constructor(private readonly ctx: Context) {
    super('job', ctx.timers);
  }

  forget(uid: string): void {
    this.memory.delete(uid);
  }

  private remember(job: KubeObject): JobMemory {
    let m = this.memory.get(job.metadata.uid);
    if (!m) {
      m = { counted: new Set(), lastFailureMs: undefined, startedMs: undefined, finishedMs: undefined };
      this.memory.set(job.metadata.uid, m);
    }
    return m;
  }

  protected sync(k: string): void {
    const { store, types } = this.ctx;
    const { namespace, name } = splitKey(k);
    const job = store.get(types.jobs, namespace, name);
    if (!job || job.metadata.deletionTimestamp) return;
    const spec = (job['spec'] ?? {}) as JobSpec;
    const status = structuredClone((job['status'] ?? {}) as JobStatus);
    const mem = this.remember(job);
    const now = this.ctx.now();
    const pods = ownedPods(this.ctx, job);
    const active = pods.filter(isActive);
    let createFailure: StatusError | undefined;

    const done = finishedCondition(status);
    if (done) {
      // Nothing runs after the end; then the TTL controller's part.
      for (const p of active) this.deletePod(job, p);
      this.writeStatus(job, status, mem, []);
      this.expire(k, job, spec, mem, done);
      return;
    }

    const fresh = pods.filter((p) => !mem.counted.has(p.metadata.uid));
    const newSucceeded = fresh.filter((p) => podStatus(p).phase === 'Succeeded');
    const newFailed = fresh.filter((p) => podStatus(p).phase === 'Failed');
    if (newFailed.length) mem.lastFailureMs = now;
    status.succeeded = (status.succeeded ?? 0) + newSucceeded.length;
    status.failed = (status.failed ?? 0) + newFailed.length;
    const counted = [...newSucceeded, ...newFailed].map((p) => p.metadata.uid);

    if (spec.suspend) {
      for (const p of active) this.deletePod(job, p);
      setCondition(status, 'Suspended', 'True', 'JobSuspended', 'Job suspended', now);
      this.writeStatus(job, status, mem, counted);
      return;
    }
    if (status.conditions?.some((c) => c.type === 'Suspended' && c.status === 'True')) {
      setCondition(status, 'Suspended', 'False', 'JobResumed', 'Job resumed', now);
      this.ctx.recorder.record(job, 'Normal', 'Resumed', 'Job resumed', SOURCE);
    }
    if (!status.startTime) {
      status.startTime = timestamp(now);
      mem.startedMs = now;
    }
    const startedMs = Math.max(mem.startedMs ?? 0, Date.parse(status.startTime));

    // With OnFailure the kubelet restarts containers in place; those restarts count as failures.
    const restarts =
      spec.template?.spec?.restartPolicy === 'OnFailure'
        ? active.reduce(
            (n, p) => n + (podStatus(p).containerStatuses ?? []).reduce((m, c) => m + c.restartCount, 0),
            0,
          )
        : 0;
    const backoffLimit = spec.backoffLimit ?? 6;
    let failure: { reason: string; message: string } | undefined;
    if ((status.failed ?? 0) + restarts > backoffLimit) {
      failure = { reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' };
    } else if (
      spec.activeDeadlineSeconds !== undefined &&
      now >= startedMs + spec.activeDeadlineSeconds * 1000
    ) {
      failure = { reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' };
    }

    const completions = spec.completions ?? null;
    const succeeded = status.succeeded;
    if (failure) {
      for (const p of active) this.deletePod(job, p);
      setCondition(status, 'Failed', 'True', failure.reason, failure.message, now);
      mem.finishedMs = now;
      this.ctx.recorder.record(job, 'Warning', failure.reason, failure.message, SOURCE);
    } else if (completions !== null ? succeeded >= completions : succeeded > 0 && active.length === 0) {
      for (const p of active) this.deletePod(job, p);
      setCondition(
        status,
        'Complete',
        'True',
        'CompletionsReached',
        'Reached expected number of succeeded pods',
        now,
      );
      status.completionTime = timestamp(now);
      mem.finishedMs = now;
      this.ctx.recorder.record(job, 'Normal', 'Completed', 'Job completed', SOURCE);
    } else {
      const parallelism = spec.parallelism ?? 1;
      // Without completions, the first success means no new pods: the others finish the work.
      const want =
        completions !== null
          ? Math.min(parallelism, completions - succeeded)
          : succeeded > 0
            ? 0
            : parallelism;
      const diff = want - active.length;
      if (diff > 0) {
        const wait = this.replacementDelay(status.failed ?? 0, mem, now);
        if (wait > 0) this.queue.addAfter(k, wait);
        else {
          const n = Math.min(diff, BURST);
          for (let i = 0; i < n && !createFailure; i++) {
            try {
              const pod = createGeneratedPod(this.ctx, job, spec.template);
              this.ctx.recorder.record(
                job,
                'Normal',
                'SuccessfulCreate',
                `Created pod: ${pod.metadata.name}`,
                SOURCE,
              );
            } catch (err) {
              if (!(err instanceof StatusError)) throw err;
              // controller_utils.go createPods' event; the sync returns the error to be retried.
              this.ctx.recorder.record(
                job,
                'Warning',
                'FailedCreate',
                `Error creating: ${err.message}`,
                SOURCE,
              );
              createFailure = err;
            }
          }
          if (diff > BURST && !createFailure) this.queue.add(k);
        }
      } else if (diff < 0) {
        const extra = [...active].sort(deletionOrder).slice(0, -diff);
        for (const p of extra) this.deletePod(job, p);
      }
      if (spec.activeDeadlineSeconds !== undefined) {
        this.queue.addAfter(k, startedMs + spec.activeDeadlineSeconds * 1000 - now + 10);
      }
    }
    this.writeStatus(job, status, mem, counted);
    const finished = finishedCondition(status);
    if (finished) this.expire(k, job, spec, mem, finished);
    if (createFailure) throw createFailure;
  }

  /** Failed pods are replaced after a back-off doubling per failure (upstream: 10 s, 20 s, … up to 6 min). */
  private replacementDelay(failed: number, mem: JobMemory, now: number): number {
    if (failed === 0 || mem.lastFailureMs === undefined) return 0;
    const b = this.ctx.behaviour;
    const delay = Math.min(b.backoffBaseMs * 2 ** (failed - 1), b.backoffMaxMs);
    return mem.lastFailureMs + delay - now;
  }

  private deletePod(job: KubeObject, pod: KubeObject): void {
    if (pod.metadata.deletionTimestamp) return;
    this.ctx.store.delete(this.ctx.types.pods, pod.metadata.namespace, pod.metadata.name, {
      preconditions: { uid: pod.metadata.uid },
    });
    this.ctx.recorder.record(job, 'Normal', 'SuccessfulDelete', `Deleted pod: ${pod.metadata.name}`, SOURCE);
  }

  private writeStatus(job: KubeObject, status: JobStatus, mem: JobMemory, counted: string[]): void {
    const { store, types } = this.ctx;
    const pods = ownedPods(this.ctx, job);
    const active = pods.filter(isActive);
    const next: JobStatus = {};
    if (status.conditions) next.conditions = status.conditions;
    if (status.startTime) next.startTime = status.startTime;
    if (status.completionTime) next.completionTime = status.completionTime;
    next.active = active.length;
    next.ready = active.filter(isReady).length;
    next.succeeded = status.succeeded ?? 0;
    next.failed = status.failed ?? 0;
    next.terminating = pods.filter((p) => p.metadata.deletionTimestamp && !isTerminal(p)).length;
    next.uncountedTerminatedPods = {};
    omitZero(next, ['active', 'succeeded', 'failed']);
    const current = store.get(types.jobs, job.metadata.namespace, job.metadata.name);
    if (!current) return;
    store.replace(types.jobs, { ...current, status: next }, { subresource: 'status' });
    // Only a stored count is a counted pod: a failed write leaves them to be counted on the retry.
    for (const uid of counted) mem.counted.add(uid);
  }

  /** ttlSecondsAfterFinished: the finished Job and (Background) its pods go that long after the end. */
  private expire(k: string, job: KubeObject, spec: JobSpec, mem: JobMemory, done: JobCondition): void {
    const ttl = spec.ttlSecondsAfterFinished;
    if (ttl === undefined || ttl === null) return;
    const finishedMs = mem.finishedMs ?? Date.parse(done.lastTransitionTime);
    const remaining = finishedMs + ttl * 1000 - this.ctx.now();
    if (remaining > 0) {
      this.queue.addAfter(k, remaining);
      return;
    }
    this.ctx.store.delete(this.ctx.types.jobs, job.metadata.namespace, job.metadata.name, {
      propagationPolicy: 'Background',
      preconditions: { uid: job.metadata.uid },
    });
  }
}

function setCondition(
  status: JobStatus,
  type: string,
  condStatus: 'True' | 'False',
  reason: string,
  message: string,
  nowMs: number,
): void {
  const now = timestamp(nowMs);
  const current = status.conditions?.find((c) => c.type === type);
  if (current && current.status === condStatus && current.reason === reason) return;
  const cond: JobCondition = {
    type,
    status: condStatus,
    lastProbeTime: now,
    lastTransitionTime: current && current.status === condStatus ? current.lastTransitionTime : now,
    reason,
    message,
  };
  status.conditions = [...(status.conditions ?? []).filter((c) => c.type !== type), cond];
}
