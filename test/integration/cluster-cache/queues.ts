/** The service's queues at rest: the callback queue idle, and the sync runs so far once none is due. */
import { Queue } from 'bullmq';
import { type Service, eventually } from '../../support/service.js';

/** A periodic sync interval no test lasts: only the watch keeps the cache fresh. */
export const HOUR_MS = '3600000';

/** Waits until the queue has nothing waiting, running or retrying. */
export async function idleQueue(s: Service, name: string): Promise<void> {
  const q = new Queue(name, { connection: s.redis, prefix: s.settings.queuePrefix });
  try {
    await eventually(async () => {
      const c = await q.getJobCounts('waiting', 'active', 'delayed');
      return Object.values(c).every((n) => n === 0);
    }, `the ${name} queue to be idle`);
  } finally {
    await q.close();
  }
}

/** Sync runs so far, once none is waiting or running. */
export async function idleSyncs(q: Queue): Promise<number> {
  return eventually(async () => {
    const c = await q.getJobCounts('waiting', 'active', 'completed', 'failed');
    return c['waiting'] === 0 && c['active'] === 0 ? (c['completed'] ?? 0) + (c['failed'] ?? 0) : undefined;
  }, 'the sync queue to be idle');
}
