// Integration tests need Redis: use the one at 127.0.0.1:6379, or start a local redis-server for the run
// (the same helper `npm start` uses). Runs after `npm run build`, so it loads the built library.
import { ensureRedis } from '../libs/runtime/dist/index.js';

const quiet = { warn: () => undefined, info: () => undefined, error: () => undefined };

export default async function globalSetup() {
  const stop = await ensureRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', quiet);
  globalThis.__stopTestRedis = stop;
}
