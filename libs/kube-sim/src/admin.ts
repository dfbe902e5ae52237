/**
 * The simulator-only `/sim/*` endpoints, which no real apiserver has: reading, setting and resetting the
 * injected faults, cutting open watches, compacting the watch history, the store's counts, and lines a
 * running container is asked to write.
 */
import type http from 'node:http';
import { StatusError, errors } from './errors.js';
import type { LogWrite } from './controllers/container-logs.js';
import type { Faults } from './faults.js';
import { type Res, readJson, send } from './http-io.js';
import type { Store } from './store.js';
import { isRecord } from './types.js';
import type { WatchStreams } from './watch.js';

export interface AdminContext {
  store: Store;
  faults: Faults;
  watches: WatchStreams;
  maxBodyBytes: number | undefined;
  writeLog?: ((req: LogWrite) => number) | undefined;
}

const POD_LOG_PATH = /^\/sim\/pods\/([^/]+)\/([^/]+)\/log$/;

/** `{container?, lines: [{stream?: stdout|stderr, text}], everyMs?}`, checked. */
function logWrite(namespace: string, name: string, body: unknown): LogWrite {
  if (!isRecord(body) || !Array.isArray(body['lines'])) {
    throw errors.badRequest('a log write is a JSON object with `lines`: [{stream, text}]');
  }
  const lines = body['lines'].map((l: unknown, i) => {
    if (!isRecord(l) || typeof l['text'] !== 'string')
      throw errors.badRequest(`lines[${i}].text must be a string`);
    const stream = l['stream'] ?? 'stdout';
    if (stream !== 'stdout' && stream !== 'stderr') {
      throw errors.badRequest(`lines[${i}].stream must be stdout or stderr`);
    }
    return { stream, text: l['text'] } as const;
  });
  const everyMs = body['everyMs'] ?? 0;
  if (typeof everyMs !== 'number' || !(everyMs >= 0)) throw errors.badRequest('everyMs must be a number ≥ 0');
  const container = body['container'];
  if (container !== undefined && typeof container !== 'string')
    throw errors.badRequest('container must be a string');
  return { namespace, name, container, lines, everyMs };
}

export async function serveAdmin(
  sim: AdminContext,
  req: http.IncomingMessage,
  res: Res,
  path: string,
  method: string,
): Promise<void> {
  const key = `${method} ${path}`;
  const podLog = method === 'POST' ? POD_LOG_PATH.exec(path) : null;
  if (podLog) {
    if (!sim.writeLog) throw new StatusError(404, 'NotFound', 'this simulator runs no kubelet');
    const req0 = logWrite(
      decodeURIComponent(podLog[1] ?? ''),
      decodeURIComponent(podLog[2] ?? ''),
      await readJson(req, sim.maxBodyBytes),
    );
    send(res, 200, { written: sim.writeLog(req0) });
    return;
  }
  switch (key) {
    case 'GET /sim/faults':
      send(res, 200, { config: sim.faults.current, injected: sim.faults.injected });
      return;
    case 'PUT /sim/faults': {
      const body = await readJson(req, sim.maxBodyBytes);
      if (!isRecord(body)) throw errors.badRequest('fault configuration must be a JSON object');
      try {
        send(res, 200, { config: sim.faults.set(body) });
      } catch (e) {
        throw errors.badRequest(e instanceof Error ? e.message : String(e));
      }
      return;
    }
    case 'DELETE /sim/faults':
      sim.faults.reset();
      send(res, 200, { config: sim.faults.current });
      return;
    case 'POST /sim/watches/cut':
      send(res, 200, { cut: sim.faults.cutWatches() });
      return;
    case 'POST /sim/compact':
      sim.store.compact();
      send(res, 200, { compactedResourceVersion: sim.store.resourceVersion });
      return;
    case 'GET /sim/stats':
      send(res, 200, {
        objects: sim.store.count(),
        resourceVersion: sim.store.resourceVersion,
        watches: sim.watches.size,
      });
      return;
    default:
      throw new StatusError(404, 'NotFound', `no admin endpoint ${key}`);
  }
}
