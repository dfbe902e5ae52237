/**
 * `npm start`: the whole service in one process for a newcomer — API, workers and the sync schedule —
 * with Redis at REDIS_URL (a local redis-server is started when none answers and one is installed) and
 * the cluster chosen by ./cluster.ts. In production the API and the workers run as separate processes.
 */
import { startApi } from '@opi/api';
import { createLogger } from '@opi/logging';
import { RedisUnavailableError, ensureRedis, onShutdown, settingsOrExit } from '@opi/runtime';
import { startWorker } from '@opi/worker';
import { chooseCluster } from './cluster.js';

const settings = settingsOrExit();
const logger = createLogger({ level: settings.logLevel, name: 'opi' });

let stopRedis: () => void;
try {
  stopRedis = await ensureRedis(settings.redisUrl, logger);
} catch (e) {
  if (!(e instanceof RedisUnavailableError)) throw e;
  logger.fatal(e.message);
  process.exit(1);
}
const cluster = await chooseCluster(settings, logger);
const worker = await startWorker(settings, logger, cluster.connection);
const api = await startApi(settings, logger);
logger.info(`ready: curl http://${settings.http.host}:${api.port}/apps`);
onShutdown(logger, settings.shutdownTimeoutMs, [
  () => api.close(),
  () => worker.close(),
  () => cluster.close(),
  () => {
    stopRedis();
    return Promise.resolve();
  },
]);
