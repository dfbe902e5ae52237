/**
 * Watch streams: newline-delimited events from a resourceVersion (replayed from the store's history, or
 * ERROR 410 when it is compacted away), bookmarks, the upstream-like timeout, cuts by fault injection, and
 * the set of open streams that `close()` ends and `/sim/stats` counts.
 */
import type http from 'node:http';
import { StatusError, errors } from './errors.js';
import type { Faults } from './faults.js';
import { JSON_TYPE, type Res, boolParam, intParam, selectorQuery } from './http-io.js';
import { type ResourceType, apiVersionOf } from './resources.js';
import type { Store, StoreEvent } from './store.js';
import { toTable, wantsTable } from './table.js';
import type { KubeObject } from './types.js';

export interface WatchOptions {
  /** Seconds after which a watch without timeoutSeconds is closed (randomised up to 2×), as upstream. */
  watchTimeoutSeconds?: number | undefined;
  bookmarkIntervalMs?: number | undefined;
  random?: (() => number) | undefined;
}

export class WatchStreams {
  /** Each open stream and what ends it (unsubscribes, clears its timers, ends the response). */
  private readonly open = new Map<Res, () => void>();

  constructor(
    private readonly store: Store,
    private readonly faults: Faults,
    private readonly options: WatchOptions,
  ) {}

  get size(): number {
    return this.open.size;
  }

  /** Ends every open stream, its timers with it (a stopped simulator keeps nothing scheduled). */
  endAll(): void {
    for (const finish of [...this.open.values()]) finish();
  }

  serve(
    req: http.IncomingMessage,
    res: Res,
    resource: ResourceType,
    namespace: string | undefined,
    q: URLSearchParams,
  ): void {
    const query = selectorQuery(namespace, q);
    if (query.fields) this.store.checkFields(resource, query.fields);
    const rvParam = q.get('resourceVersion');
    const table = wantsTable(req.headers.accept);
    const bookmarks = boolParam(q, 'allowWatchBookmarks');
    const timeoutSeconds = intParam(q, 'timeoutSeconds');

    res.writeHead(200, {
      'Content-Type': JSON_TYPE,
      'Transfer-Encoding': 'chunked',
      'Cache-Control': 'no-cache',
    });
    res.flushHeaders();
    // Assigned below once the subscription exists; until then a stalled client just ends the response.
    let finish = (): void => {
      res.end();
    };
    const write = (type: string, object: unknown): void => {
      const payload =
        table && type !== 'ERROR' && type !== 'BOOKMARK'
          ? toTable(resource, [object as KubeObject], this.store.now())
          : object;
      res.write(`${JSON.stringify({ type, object: payload })}\n`);
      // A client that does not read is dropped rather than buffered without bound (as upstream does).
      if (res.writableLength > 32 * 1024 * 1024) finish();
    };

    let replay: StoreEvent[] = [];
    if (!rvParam || rvParam === '0') {
      for (const o of this.store.list(resource, query).items) write('ADDED', o);
    } else {
      const rv = Number(rvParam);
      if (!Number.isInteger(rv) || rv < 0) {
        write('ERROR', errors.badRequest(`invalid resource version: ${rvParam}`).toStatus());
        res.end();
        return;
      }
      try {
        replay = this.store.eventsSince(rv);
      } catch (e) {
        if (!(e instanceof StatusError)) throw e;
        write('ERROR', e.toStatus());
        res.end();
        return;
      }
    }
    const deliver = (e: StoreEvent): void => {
      if (e.resource !== resource) return;
      const now = this.store.matches(resource, e.object, query);
      const before = e.previous !== undefined && this.store.matches(resource, e.previous, query);
      if (e.type === 'DELETED') {
        if (before || now) write('DELETED', e.object);
      } else if (now && before) write('MODIFIED', e.object);
      else if (now) write('ADDED', e.object);
      else if (before) write('DELETED', e.object);
    };
    for (const e of replay) deliver(e);
    // Everything above ran synchronously, so no event can fall between replay and subscription.
    const unsubscribe = this.store.subscribe(deliver);

    let done = false;
    const timers: NodeJS.Timeout[] = [];
    finish = (): void => {
      if (done) return;
      done = true;
      unsubscribe();
      uncut?.();
      for (const t of timers) clearTimeout(t);
      this.open.delete(res);
      res.end();
    };
    this.open.set(res, finish);
    const uncut: (() => void) | undefined = this.faults.onCut(finish);
    const base = this.options.watchTimeoutSeconds ?? 1800;
    const timeoutMs =
      timeoutSeconds !== undefined
        ? timeoutSeconds * 1000
        : base * 1000 * (1 + (this.options.random ?? Math.random)());
    timers.push(setTimeout(finish, timeoutMs));
    if (bookmarks) {
      const every = this.options.bookmarkIntervalMs ?? 60_000;
      const bookmark = (): void => {
        write('BOOKMARK', {
          kind: resource.kind,
          apiVersion: apiVersionOf(resource),
          metadata: { resourceVersion: this.store.resourceVersion },
        });
      };
      const tick = (): void => {
        bookmark();
        timers.push(setTimeout(tick, every));
      };
      timers.push(setTimeout(tick, every));
      // As the apiserver's watch cache (cacheWatcher.nextBookmarkTime): one more 2 s before a client's
      // timeoutSeconds, so that its next watch resumes from close to now.
      if (timeoutSeconds !== undefined) timers.push(setTimeout(bookmark, Math.max(0, timeoutMs - 2000)));
    }
    req.on('close', finish);
    res.on('close', finish);
    res.on('error', finish);
    // A connection destroyed while the request was on its way here (the simulator closing) has emitted
    // 'close' already.
    if (res.destroyed || req.destroyed) finish();
  }
}
