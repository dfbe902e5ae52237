/**
 * The one registry of queues, job names and payload schemas. Payloads carry identities only: handlers
 * read the latest desired state, so a job that runs late, twice or out of order still converges to the
 * last request, and no credential ever sits in job data (which operators see on the dashboard).
 */
import { z } from 'zod';

export const QUEUE_NAMES = {
  /** Converging LRPs and restarting instances. */
  lrp: 'lrp',
  /** The periodic cluster sync; its own queue so an LRP backlog cannot delay the cache refresh. */
  sync: 'sync',
} as const;

export type QueueName = (typeof QUEUE_NAMES)[keyof typeof QUEUE_NAMES];

const processGuid = z.string().min(3).max(127);

export const JOBS = {
  convergeLrp: {
    name: 'converge-lrp',
    queue: QUEUE_NAMES.lrp,
    schema: z.object({ processGuid }),
  },
  stopInstance: {
    name: 'stop-instance',
    queue: QUEUE_NAMES.lrp,
    schema: z.object({ processGuid, index: z.int().min(0), podName: z.string().min(1).max(253) }),
  },
  syncCluster: {
    name: 'sync-cluster',
    queue: QUEUE_NAMES.sync,
    schema: z.object({}),
  },
} as const;

export type JobKey = keyof typeof JOBS;
export type JobName = (typeof JOBS)[JobKey]['name'];
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
