/** Flushes the service's own Redis database, after checking it holds nothing but the service's keys. */
import { Redis } from 'ioredis';
import type { Service } from '../../support/service.js';

export async function flushServiceDb(s: Service, db: number): Promise<void> {
  const client = new Redis(`redis://127.0.0.1:6379/${db}`);
  try {
    const foreign = (await client.keys('*')).filter((key) => !key.startsWith(`${s.settings.queuePrefix}:`));
    expect(foreign).toEqual([]);
    await client.flushdb();
  } finally {
    client.disconnect();
  }
}
