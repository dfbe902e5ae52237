/**
 * `npm start`: the whole service in one process for a newcomer — API, workers and the sync schedule —
 * with Redis at REDIS_URL (a local redis-server is started when none answers and one is installed) and
 * the cluster chosen by ./cluster.ts. In production the API and the workers run as separate processes.
 */
import { assertSafeToListenOrExit, startApi } from '@opi/api';
import { createLogger } from '@opi/logging';
import { createMetrics } from '@opi/metrics';
import { RedisUnavailableError, ensureRedis, onShutdown, settingsOrExit } from '@opi/runtime';
import { StartRefusedError, startWorker } from '@opi/worker';
import { chooseCluster } from './cluster.js';

const settings = settingsOrExit();
const logger = createLogger({ level: settings.logLevel, name: 'opi' });
// Before Redis, workers or a cluster are touched: an API open to the network does not start.
assertSafeToListenOrExit(settings, logger);

let stopRedis: () => void;
try {
  // A Redis Cluster or Sentinel is given, never started: REDIS_URL is not used then.
  const single = !settings.redis.clusterNodes.length && !settings.redis.sentinels.length;
  stopRedis = single ? await ensureRedis(settings.redisUrl, logger) : () => undefined;
} catch (e) {
  if (!(e instanceof RedisUnavailableError)) throw e;
  logger.fatal(e.message);
  process.exit(1);
}
const cluster = await chooseCluster(settings, logger);
// One registry for both halves, served by the API's /metrics; no separate worker metrics port.
const metrics = createMetrics();
const worker = await startWorker(settings, logger, cluster.connection, {
  metrics,
  metricsServer: false,
}).catch(async (e: unknown) => {
  if (!(e instanceof StartRefusedError)) throw e;
  logger.fatal(e.message);
  await cluster.close();
  stopRedis();
  process.exit(2);
});
const api = await startApi(settings, logger, { metrics });
const scheme = settings.security.tls ? 'https' : 'http';
logger.info(`ready: curl ${scheme}://${settings.http.host}:${api.port}/apps`);
onShutdown(logger, settings.shutdownTimeoutMs, [
  () => api.close(),
  () => worker.close(),
  () => cluster.close(),
  () => {
    stopRedis();
    return Promise.resolve();
  },
]);
