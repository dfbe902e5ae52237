/**
 * The typed job registry: the queues, the job names and their payload schemas, in one place. Payloads carry identities only: handlers
 * read the latest desired state, so a job that runs late, twice or out of order still converges to the
 * last request, and no credential ever sits in job data (which operators see on the dashboard).
 */
import { z } from 'zod';

export const QUEUE_NAMES = {
  /** Converging LRPs and restarting instances. */
  lrp: 'lrp',
  /** The periodic cluster sync; its own queue so an LRP backlog cannot delay the cache refresh. */
  sync: 'sync',
  /** Running and cancelling tasks, staging. */
  task: 'task',
  /** Reports to CC (task and staging completions, crashes): their own queue, so a CC that is down
   *  and their long retries hold up nothing else. */
  callback: 'callback',
} as const;

export type QueueName = (typeof QUEUE_NAMES)[keyof typeof QUEUE_NAMES];

const processGuid = z.string().min(3).max(127);
const guid = z.string().min(1).max(63);

export const JOBS = {
  convergeLrp: {
    name: 'converge-lrp',
    queue: QUEUE_NAMES.lrp,
    // `fresh`: the request made the LRP desired from nothing (or from a stop), so its Deployment most
    // likely does not exist yet: the converge creates first instead of reading first. Only a hint.
    // `repair`: the watch saw the workload deleted or its spec changed by someone else: the converge
    // writes the record's spec even when the workload carries the record's generation.
    schema: z.object({ processGuid, fresh: z.boolean().optional(), repair: z.boolean().optional() }),
  },
  stopInstance: {
    name: 'stop-instance',
    queue: QUEUE_NAMES.lrp,
    schema: z.object({ processGuid, index: z.int().min(0), podName: z.string().min(1).max(253) }),
  },
  settleRollout: {
    name: 'settle-rollout',
    queue: QUEUE_NAMES.lrp,
    // A StatefulSet's rollout after the converge changed its template (generation), watched by a few
    // checks spaced out (check: how many came before) so crash-looping old pods cannot hold it up.
    // `once`: a check the watch asked for (old-revision pods not ready): it schedules no next one.
    schema: z.object({
      processGuid,
      generation: z.int().min(0),
      check: z.int().min(0).max(100),
      once: z.boolean().optional(),
    }),
  },
  syncCluster: {
    name: 'sync-cluster',
    queue: QUEUE_NAMES.sync,
    schema: z.object({}),
  },
  runTask: { name: 'run-task', queue: QUEUE_NAMES.task, schema: z.object({ taskGuid: guid }) },
  cancelTask: { name: 'cancel-task', queue: QUEUE_NAMES.task, schema: z.object({ taskGuid: guid }) },
  stage: { name: 'stage', queue: QUEUE_NAMES.task, schema: z.object({ stagingGuid: guid }) },
  reportTask: { name: 'report-task', queue: QUEUE_NAMES.callback, schema: z.object({ taskGuid: guid }) },
  reportStaging: {
    name: 'report-staging',
    queue: QUEUE_NAMES.callback,
    schema: z.object({ stagingGuid: guid }),
  },
  reportCrash: {
    name: 'report-crash',
    queue: QUEUE_NAMES.callback,
    // The report itself (no secrets in it) and where to mark it sent.
    schema: z.object({
      processGuid,
      instance: z.string().min(1).max(253),
      index: z.int().min(0),
      reason: z.string().max(1024),
      exitStatus: z.int(),
      exitDescription: z.string().max(4096),
      crashCount: z.int().min(0),
      crashTimestamp: z.int().min(0),
      podNamespace: z.string().min(1).max(63),
      podUid: z.string().min(1).max(64),
    }),
  },
} as const;

export type JobKey = keyof typeof JOBS;
export type JobPayload<K extends JobKey> = z.infer<(typeof JOBS)[K]['schema']>;

const byName = new Map<string, JobKey>(Object.entries(JOBS).map(([k, v]) => [v.name, k as JobKey]));

/** Finds a job's registry entry by its BullMQ name. */
export function jobKeyOf(name: string): JobKey | undefined {
  return byName.get(name);
}

/** BullMQ job ids may not contain ':' and must not be all digits. */
export function jobId(...parts: (string | number)[]): string {
  return parts.join('-').replace(/:/g, '_');
}
