import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { KubeApiError } from '../port/errors.js';
import { openWatchStream } from './watch-stream.js';

let server: Server | undefined;
afterEach(async () => {
  const s = server;
  server = undefined;
  if (!s) return;
  s.closeAllConnections();
  await new Promise((resolve) => {
    s.close(resolve);
  });
});

/** A server answering every request with `answer`; resolves its URL. */
async function serve(answer: (res: ServerResponse) => void): Promise<URL> {
  server = createServer((_req, res) => {
    answer(res);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/pods?watch=true`);
}

function open(url: URL, deadlineMs = 5_000, onEvent: (e: unknown) => void = () => undefined) {
  const statuses: (number | 'error')[] = [];
  const handle = openWatchStream({
    prepare: () => Promise.resolve({ url, headers: { authorization: 'Bearer t' } }),
    deadlineMs,
    context: { verb: 'watch', resource: 'pods', namespace: 'ns' },
    onEvent,
    onEnd: (status) => statuses.push(status),
  });
  return {
    handle,
    statuses,
    settled: handle.done.then(
      () => 'resolved',
      (e: unknown) => e,
    ),
  };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('openWatchStream', () => {
  it('hands over each line in order, whole, however the chunks split it (UTF-8 included)', async () => {
    const lines = [
      { type: 'ADDED', object: { metadata: { name: 'a', annotations: { note: 'größe ✓' } } } },
      { type: 'MODIFIED', object: { metadata: { name: 'a', creationTimestamp: '2026-01-01T00:00:00Z' } } },
      { type: 'DELETED', object: { metadata: { name: 'a' } } },
    ];
    const bytes = Buffer.from(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // Three bytes at a time: lines and multi-byte characters both straddle chunks.
      let at = 0;
      const next = (): void => {
        if (at >= bytes.length) {
          res.end();
          return;
        }
        res.write(bytes.subarray(at, at + 3));
        at += 3;
        setImmediate(next);
      };
      next();
    });
    const seen: unknown[] = [];
    const w = open(url, 5_000, (e) => seen.push(e));
    expect(await w.settled).toBe('resolved');
    expect(seen).toEqual(lines);
    expect(w.statuses).toEqual([200]);
  });

  it('rejects with the Status of a refused request (410 stays 410)', async () => {
    const url = await serve((res) => {
      res.writeHead(410, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' }),
      );
    });
    const w = open(url);
    const err = await w.settled;
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ status: 410, reason: 'Expired', message: 'too old resource version' });
    expect(w.statuses).toEqual([410]);
  });

  it('rejects with what onEvent threw, and stops reading', async () => {
    const url = await serve((res) => {
      res.writeHead(200);
      res.write('{"type":"ADDED","object":{}}\n{"type":"ADDED","object":{}}\n');
    });
    const boom = new Error('boom');
    let calls = 0;
    const w = open(url, 5_000, () => {
      calls++;
      throw boom;
    });
    expect(await w.settled).toBe(boom);
    expect(calls).toBe(1);
  });

  it('rejects a line that is not JSON as a transient failure', async () => {
    const url = await serve((res) => {
      res.writeHead(200);
      res.end('not json\n');
    });
    expect(await open(url).settled).toMatchObject({ reason: 'InvalidResponse', transient: true });
  });

  it('aborts at the deadline (transient Timeout), resolves on stop, fails on a cut connection', async () => {
    const url = await serve((res) => {
      res.writeHead(200);
      res.flushHeaders();
    });
    const silent = open(url, 200);
    expect(await silent.settled).toMatchObject({ status: undefined, reason: 'Timeout', transient: true });
    expect(silent.statuses).toEqual([200]);

    const stopped = open(url);
    await pause(50);
    stopped.handle.stop();
    expect(await stopped.settled).toBe('resolved');

    const cut = open(url);
    await pause(50);
    server?.closeAllConnections();
    expect(await cut.settled).toMatchObject({
      status: undefined,
      reason: 'ConnectionReset',
      transient: true,
    });
  });

  it('fails as a network error when nothing listens', async () => {
    const url = await serve(() => undefined);
    server?.close();
    await pause(10);
    const w = open(url);
    expect(await w.settled).toMatchObject({
      status: undefined,
      reason: 'ConnectionRefused',
      transient: true,
    });
    expect(w.statuses).toEqual(['error']);
  });
});
