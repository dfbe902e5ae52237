import { describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { StoreUnavailableError, replies, storeClient, storeError } from './unavailable.js';

const offline = new Error("Stream isn't writeable and enableOfflineQueue options is false");

describe('StoreUnavailableError', () => {
  it('is what a connection-level failure becomes; any other error stays as it is', () => {
    for (const msg of [
      'Connection is closed.',
      'connect ECONNREFUSED 127.0.0.1:1',
      'Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.',
    ]) {
      const err = storeError(new Error(msg));
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect((err as Error).cause).toEqual(new Error(msg));
    }
    const reply = new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
    expect(storeError(reply)).toBe(reply);
  });

  it('is thrown by a store client command and by a batch that got no replies', async () => {
    const redis = storeClient({
      get: () => Promise.reject(offline),
      set: () => Promise.reject(new Error('ERR syntax error')),
      status: 'end',
    } as unknown as Redis);
    await expect(redis.get('k')).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(redis.set('k', 'v')).rejects.toThrow('ERR syntax error');
    expect(redis.status).toBe('end');
    await expect(replies({ exec: () => Promise.resolve(null) })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    await expect(replies({ exec: () => Promise.reject(offline) })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    await expect(replies({ exec: () => Promise.resolve([[offline, null]]) })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
  });
});
