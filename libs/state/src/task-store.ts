/**
 * Tasks and stagings in Redis: one JSON record each, created once (a repeated POST is a no-op),
 * changed only by compare-and-set, and a set of the tasks CC has not yet been told the end of, which is
 * what GET /tasks lists. A record's outcome is written once, by whoever sees the end first; `reported`
 * turns true once CC acknowledged (or refused) the callback, after which the record expires.
 */
import type { Cluster, Redis } from 'ioredis';
import type { DesiredStaging, DesiredTask, StagingOutcome, TaskOutcome } from '@opi/domain';
import { type Keys, keys } from './keys.js';
import { CAS_WITH_SET, runScript } from './scripts.js';
import { storeClient } from './unavailable.js';

export interface TaskRecord {
  task: DesiredTask;
  cancelled: boolean;
  outcome?: TaskOutcome;
  reported: boolean;
  createdAt: number;
}

export interface StagingRecord {
  staging: DesiredStaging;
  outcome?: StagingOutcome;
  reported: boolean;
  createdAt: number;
}

/** How long a reported record is kept (for late duplicates to find it), in seconds. */
export const REPORTED_TTL_SECONDS = 24 * 3600;

export class TaskStore {
  readonly keys: Keys;

  private readonly redis: Redis | Cluster;

  /** A Cluster works as well: every key of one prefix shares its hash tag (see keys.ts). */
  constructor(redis: Redis | Cluster, prefix: string) {
    this.redis = storeClient(redis);
    this.keys = keys(prefix);
  }

  private async cas(
    key: string,
    expected: string,
    next: object,
    member: string,
    setOp: 'add' | 'rem' | 'none',
    ttl = 0,
  ): Promise<boolean> {
    const r = await runScript(
      this.redis,
      CAS_WITH_SET,
      [key, this.keys.tasks],
      [expected, JSON.stringify(next), member, setOp, String(ttl)],
    );
    return r === 1;
  }

  /** Changes a record with `change` until the compare-and-set holds; undefined when there is none. */
  private async update<R extends object>(
    key: string,
    member: string,
    change: (cur: R) => { next: R; setOp?: 'add' | 'rem' | 'none'; ttl?: number } | undefined,
  ): Promise<R | undefined> {
    for (;;) {
      const raw = await this.redis.get(key);
      if (!raw) return undefined;
      const cur = JSON.parse(raw) as R;
      const step = change(cur);
      if (!step) return cur;
      if (await this.cas(key, raw, step.next, member, step.setOp ?? 'none', step.ttl ?? 0)) return step.next;
    }
  }

  async createTask(task: DesiredTask): Promise<boolean> {
    const record: TaskRecord = { task, cancelled: false, reported: false, createdAt: Date.now() };
    return this.cas(this.keys.task(task.taskGuid), '', record, task.taskGuid, 'add');
  }

  async getTask(taskGuid: string): Promise<TaskRecord | undefined> {
    const raw = await this.redis.get(this.keys.task(taskGuid));
    return raw ? (JSON.parse(raw) as TaskRecord) : undefined;
  }

  /** Guids of the tasks not yet reported to CC. */
  async unreportedTaskGuids(): Promise<string[]> {
    return this.redis.smembers(this.keys.tasks);
  }

  /** Marks a task cancelled; its outcome becomes the cancellation unless it had already ended. */
  async cancelTask(taskGuid: string): Promise<TaskRecord | undefined> {
    return this.update<TaskRecord>(this.keys.task(taskGuid), taskGuid, (cur) =>
      cur.cancelled || cur.reported
        ? undefined
        : {
            next: {
              ...cur,
              cancelled: true,
              outcome: cur.outcome ?? { failed: true, failureReason: 'task was cancelled' },
            },
          },
    );
  }

  /** Records how a task ended; the first outcome seen wins. */
  async setTaskOutcome(taskGuid: string, outcome: TaskOutcome): Promise<TaskRecord | undefined> {
    return this.update<TaskRecord>(this.keys.task(taskGuid), taskGuid, (cur) =>
      cur.outcome ? undefined : { next: { ...cur, outcome } },
    );
  }

  /** CC has been told (or refused): the task leaves GET /tasks and its record expires in a while. */
  async markTaskReported(taskGuid: string): Promise<void> {
    await this.update<TaskRecord>(this.keys.task(taskGuid), taskGuid, (cur) =>
      cur.reported
        ? undefined
        : { next: { ...cur, reported: true }, setOp: 'rem', ttl: REPORTED_TTL_SECONDS },
    );
  }

  async createStaging(staging: DesiredStaging): Promise<boolean> {
    const record: StagingRecord = { staging, reported: false, createdAt: Date.now() };
    return this.cas(this.keys.staging(staging.stagingGuid), '', record, staging.stagingGuid, 'none');
  }

  async getStaging(stagingGuid: string): Promise<StagingRecord | undefined> {
    const raw = await this.redis.get(this.keys.staging(stagingGuid));
    return raw ? (JSON.parse(raw) as StagingRecord) : undefined;
  }

  async setStagingOutcome(stagingGuid: string, outcome: StagingOutcome): Promise<StagingRecord | undefined> {
    return this.update<StagingRecord>(this.keys.staging(stagingGuid), stagingGuid, (cur) =>
      cur.outcome ? undefined : { next: { ...cur, outcome } },
    );
  }

  async markStagingReported(stagingGuid: string): Promise<void> {
    await this.update<StagingRecord>(this.keys.staging(stagingGuid), stagingGuid, (cur) =>
      cur.reported ? undefined : { next: { ...cur, reported: true }, ttl: REPORTED_TTL_SECONDS },
    );
  }
}
