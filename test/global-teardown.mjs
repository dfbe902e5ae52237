// Stops the Redis the global setup started, then checks the run left nothing that keeps Node alive (jest
// runs the files in its own process on two cores and would wait for it). A leak fails the run, naming its
// kind: an error thrown here ends jest with exit code 1 at once.
import { setTimeout as sleep } from 'node:timers/promises';

const GRACE_MS = 10_000;
const KINDS = new Set(['Timeout', 'Immediate', 'TCPSocketWrap', 'TCPServerWrap', 'ProcessWrap']);

function leaked() {
  return process.getActiveResourcesInfo().filter((kind) => KINDS.has(kind));
}

export default async function globalTeardown() {
  globalThis.__stopTestRedis?.();
  const deadline = Date.now() + GRACE_MS;
  while (leaked().length > 0 && Date.now() < deadline) await sleep(200);
  const left = leaked();
  if (left.length === 0) return;
  const counts = new Map();
  for (const kind of left) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  throw new Error(
    `Still open ${GRACE_MS / 1000} s after the last test: ${[...counts].map(([k, n]) => `${k} × ${n}`).join(', ')}. ` +
      'A test left a server, client or timer running; find it with `npm run jest -- <files> --detectOpenHandles`.',
  );
}
