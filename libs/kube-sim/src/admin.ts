/**
 * The simulator-only `/sim/*` endpoints, which no real apiserver has: reading, setting and resetting the
 * injected faults, cutting open watches, compacting the watch history, and the store's counts.
 */
import type http from 'node:http';
import { StatusError, errors } from './errors.js';
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
}

export async function serveAdmin(
  sim: AdminContext,
  req: http.IncomingMessage,
  res: Res,
  path: string,
  method: string,
): Promise<void> {
  const key = `${method} ${path}`;
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
