/**
 * A job that cannot be added because Redis went away rejects with QueueUnavailableError, which the API
 * answers with 503 like the stores' StoreUnavailableError: a Redis that went down between a request's
 * record and its job is "try again", not a 500. A private redis-server, stopped mid-test.
 */
import { UnavailableError } from '@opi/domain';
import { JobProducer, QueueUnavailableError, producerConnection } from '@opi/queue';
import { startPrivateRedis } from '../../chaos/redis-server.js';

describe('the producer when Redis goes away', () => {
  it("rejects an add with QueueUnavailableError on the API's connection", async () => {
    const server = await startPrivateRedis();
    const redis = producerConnection(server.url);
    redis.on('error', () => undefined);
    const producer = new JobProducer({ connection: redis, prefix: 'test-unavailable', attempts: 1 });
    try {
      await producer.runTask('task-1');
      await server.kill();
      const added = producer.runTask('task-2');
      await expect(added).rejects.toBeInstanceOf(QueueUnavailableError);
      await expect(added).rejects.toBeInstanceOf(UnavailableError);
      await expect(
        producer.stopInstance({ processGuid: 'app-guid-v1', index: 0, podName: 'app-0' }),
      ).rejects.toBeInstanceOf(QueueUnavailableError);
    } finally {
      await producer.close().catch(() => undefined);
      redis.disconnect();
      await server.close();
    }
  });
});
