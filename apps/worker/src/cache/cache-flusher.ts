/**
 * What the watch's events leave to do, folded and done in batches: LRPs' instances entries written
 * (fenced by the Lease's token) with their crash reports and routes, Jobs handed to the job step, and
 * drifted or held-up LRPs enqueued for repair. A burst of events costs one write per LRP, and one flush
 * runs at a time so the writer never falls behind without bound.
 */
import { type AppPodSummary, assignIndexMap } from '@opi/translation';
import type { Job, Pod } from '@opi/kube-objects';
import type { Stored } from '@opi/kube';
import type { JobProducer } from '@opi/queue';
import type { CacheWriter, StateStore } from '@opi/state';
import type { Logger } from '@opi/logging';
import type { ClusterCacheObserver, RewriteOptions } from './cluster-view.js';
import { enqueueCrashReports } from './crash-reports.js';
import { instancesEntry } from './instances-entry.js';

/** Entries per fenced write, and LRPs whose previous assignments are read per round trip. */
const WRITE_BATCH = 500;

/** What the flusher reads of the watched cluster. */
export interface FlushSource {
  /** Every LRP that may have an entry: those with pods or refused pods. */
  lrps(): Iterable<string>;
  podsOf(processGuid: string): AppPodSummary[];
  /** What the LRP's entry says of refused pods, judged as it is written. */
  unplacedOf(processGuid: string, pods: number): string | undefined;
  /** The LRP's entry was written (or deleted) with these indexes: for routing. */
  lrpWritten?(
    processGuid: string,
    run: readonly AppPodSummary[],
    assignments: ReadonlyMap<string, number>,
    changedAt: number | undefined,
  ): void;
  job(key: string): Stored<Job> | undefined;
  podsOfJob(namespace: string, name: string): Pod[];
  /** For the snapshot's meta. */
  workloadCounts(): { deployments: number; statefulsets: number };
}

export interface CacheFlusherDeps {
  store: StateStore;
  writer: CacheWriter;
  logger: Logger;
  /** Enqueues a crash report (undefined: crash reports are off). */
  reportCrashes?: Parameters<typeof enqueueCrashReports>[0] | undefined;
  /** Enqueues repairs and rollout checks of drifted LRPs (undefined: the watch repairs nothing). */
  repairs?: Pick<JobProducer, 'repairLrp' | 'settleRolloutNow'> | undefined;
  /** Called with a Job (slim) and its pods whenever either changed; records outcomes, enqueues reports. */
  onJob(job: Stored<Job>, pods: Pod[]): Promise<void>;
  observer?: ClusterCacheObserver | undefined;
}

export class CacheFlusher {
  /** LRPs whose entry must be written, with the oldest change not yet written. */
  private dirtyLrps = new Map<string, number | undefined>();
  private dirtyJobs = new Set<string>();
  /** LRPs whose workload drifted, with the event that showed it (a repair's cause). */
  private drifted = new Map<string, string>();
  /** StatefulSet LRPs whose rollout is held up, with the generation their workload is stamped with. */
  private heldUp = new Map<string, number>();
  private flushing: Promise<void> | undefined;
  /** Whole rewrites in progress; per-LRP flushes wait for them. */
  private rewriting = 0;
  /** When the last whole rewrite finished: the sync right after a takeover's first one skips it. */
  private rewrittenAt = 0;
  /** Whether the first snapshot was written; until then events only fill memory. */
  private ready = false;
  private stopped = false;

  constructor(
    private readonly deps: CacheFlusherDeps,
    private readonly source: FlushSource,
    private token: number,
  ) {}

  /** A new fencing token (the Lease was taken again): later writes carry it. */
  fence(token: number): void {
    this.token = token;
  }

  markLrp(processGuid: string, changedAt: number | undefined): void {
    const had = this.dirtyLrps.get(processGuid);
    this.dirtyLrps.set(
      processGuid,
      had === undefined ? changedAt : changedAt === undefined ? had : Math.min(had, changedAt),
    );
    this.schedule();
  }

  markJob(key: string): void {
    this.dirtyJobs.add(key);
    this.schedule();
  }

  markDrifted(processGuid: string, cause: string): void {
    this.drifted.set(processGuid, cause);
    this.schedule();
  }

  markHeldUp(processGuid: string, generation: number): void {
    this.heldUp.set(processGuid, generation);
    this.schedule();
  }

  /** The first snapshot is written: events are written from now on. */
  open(): void {
    this.ready = true;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.flushing;
  }

  /** Resolves once every change marked so far is written (or its write failed). */
  async settled(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /**
   * Every LRP's entry into a fresh snapshot swapped in at once (fenced), keeping the indexes Redis holds.
   * Pending per-LRP writes are dropped: the snapshot has them.
   */
  async rewriteInstances(options: RewriteOptions = {}): Promise<{ pods: number } | undefined> {
    const within = options.unlessWithinMs;
    if (within !== undefined && Date.now() - this.rewrittenAt < within) return undefined;
    // No per-LRP write may land between the snapshot's reads and its rename (the rename would undo it):
    // flushes wait, and what changes meanwhile stays marked for the first flush after.
    this.rewriting++;
    try {
      while (this.flushing) await this.flushing;
      this.dirtyLrps.clear();
      return await this.writeSnapshot();
    } finally {
      this.rewriting--;
      this.schedule();
    }
  }

  private async writeSnapshot(): Promise<{ pods: number }> {
    const started = Date.now();
    const snapshot = this.deps.writer.snapshot(this.token);
    const lrps = [...new Set(this.source.lrps())];
    let pods = 0;
    try {
      for (let b = 0; b < lrps.length; b += WRITE_BATCH) {
        const batch = lrps.slice(b, b + WRITE_BATCH);
        const previous = await this.deps.store.cachedAssignments(batch);
        for (const [k, pg] of batch.entries()) {
          const run = this.source.podsOf(pg);
          pods += run.length;
          const assignments = assignIndexMap(previous[k] ?? new Map<string, number>(), run);
          this.source.lrpWritten?.(pg, run, assignments, undefined);
          const unplaced = this.source.unplacedOf(pg, run.length);
          if (run.length === 0 && unplaced === undefined) continue;
          await snapshot.add(pg, instancesEntry(run, assignments, unplaced));
          await this.reportCrashes(run, assignments);
        }
      }
      const workloads = this.source.workloadCounts();
      await snapshot.commit({
        syncedAt: String(Date.now()),
        durationMs: String(Date.now() - started),
        deployments: String(workloads.deployments),
        statefulsets: String(workloads.statefulsets),
        pods: String(pods),
      });
      this.rewrittenAt = Date.now();
      return { pods };
    } catch (e) {
      await snapshot.abandon().catch(() => undefined);
      throw e;
    }
  }

  /** One flush at a time; changes marked meanwhile are folded into the next. */
  private schedule(): void {
    if (!this.ready || this.flushing || this.stopped || this.rewriting > 0) return;
    this.flushing = new Promise<void>((resolve) => {
      setImmediate(resolve);
    })
      .then(() => this.flush())
      .catch((err: unknown) => {
        this.deps.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'cache write failed',
        );
        return new Promise<void>((resolve) => setTimeout(resolve, 500).unref());
      })
      .finally(() => {
        this.flushing = undefined;
        if (this.dirtyLrps.size + this.dirtyJobs.size + this.drifted.size + this.heldUp.size > 0) {
          this.schedule();
        }
      });
  }

  private async flush(): Promise<void> {
    while (this.dirtyLrps.size > 0 && !this.stopped) {
      const batch = [...this.dirtyLrps].slice(0, WRITE_BATCH);
      for (const [pg] of batch) this.dirtyLrps.delete(pg);
      try {
        await this.writeLrps(batch);
      } catch (e) {
        // Put them back (a later change may have marked them again meanwhile: keep the older time).
        for (const [pg, at] of batch) this.markLrp(pg, at);
        throw e;
      }
    }
    await this.repairDrifted();
    const jobs = [...this.dirtyJobs];
    this.dirtyJobs.clear();
    for (const key of jobs) {
      if (this.stopped) return;
      const job = this.source.job(key);
      if (!job) continue;
      try {
        await this.deps.onJob(job, this.source.podsOfJob(job.metadata.namespace ?? '', job.metadata.name));
      } catch (e) {
        this.dirtyJobs.add(key);
        throw e;
      }
    }
  }

  /**
   * Enqueues a repair for each drifted LRP that is desired (our own stop deleting its workload costs one
   * read of the record), and a rollout check for each held-up one. Folded per LRP: a burst is one job.
   */
  private async repairDrifted(): Promise<void> {
    const repairs = this.deps.repairs;
    if (!repairs) {
      this.drifted.clear();
      this.heldUp.clear();
      return;
    }
    while (this.drifted.size > 0 && !this.stopped) {
      const batch = [...this.drifted].slice(0, WRITE_BATCH);
      for (const [pg] of batch) this.drifted.delete(pg);
      try {
        const records = await Promise.all(batch.map(([pg]) => this.deps.store.get(pg)));
        for (const [k, [pg, cause]] of batch.entries()) {
          if (records[k]?.state !== 'desired') continue;
          this.deps.logger.info({ processGuid: pg, cause }, 'workload drifted: converging');
          await repairs.repairLrp(pg, cause);
        }
      } catch (e) {
        for (const [pg, cause] of batch) if (!this.drifted.has(pg)) this.drifted.set(pg, cause);
        throw e;
      }
    }
    const held = [...this.heldUp];
    this.heldUp.clear();
    for (const [k, [pg, generation]] of held.entries()) {
      try {
        await repairs.settleRolloutNow(pg, generation);
      } catch (e) {
        for (const [p, g] of held.slice(k)) if (!this.heldUp.has(p)) this.heldUp.set(p, g);
        throw e;
      }
    }
  }

  private async writeLrps(batch: [string, number | undefined][]): Promise<void> {
    const pgs = batch.map(([pg]) => pg);
    const previous = await this.deps.store.cachedAssignments(pgs);
    const put: [string, string][] = [];
    const gone: string[] = [];
    const crashes: [AppPodSummary[], Map<string, number>][] = [];
    for (const [k, [pg, at]] of batch.entries()) {
      const run = this.source.podsOf(pg);
      const unplaced = this.source.unplacedOf(pg, run.length);
      if (run.length === 0 && unplaced === undefined) {
        this.source.lrpWritten?.(pg, run, new Map(), at);
        gone.push(pg);
        continue;
      }
      const assignments = assignIndexMap(previous[k] ?? new Map<string, number>(), run);
      this.source.lrpWritten?.(pg, run, assignments, at);
      put.push([pg, instancesEntry(run, assignments, unplaced)]);
      crashes.push([run, assignments]);
    }
    await this.deps.writer.putInstances(this.token, put);
    await this.deps.writer.deleteInstances(this.token, gone);
    const now = Date.now();
    for (const [, at] of batch) {
      if (at !== undefined) this.deps.observer?.lag?.('pods', Math.max(0, now - at) / 1000);
    }
    for (const [run, assignments] of crashes) await this.reportCrashes(run, assignments);
  }

  /**
   * The LRP's crash reports, their indexes shown as /instances shows them: against the desired count of
   * the LRP's record, read only when a crash is due (rare).
   */
  private async reportCrashes(run: AppPodSummary[], assignments: ReadonlyMap<string, number>): Promise<void> {
    const pg = run.find((p) => p.unreported)?.processGuid;
    if (!this.deps.reportCrashes || pg === undefined) return;
    const record = await this.deps.store.get(pg);
    const desired = record ? (record.state === 'desired' ? record.lrp.instances : 0) : undefined;
    await enqueueCrashReports(this.deps.reportCrashes, run, assignments, desired);
  }
}
