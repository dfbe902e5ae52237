/** The reflector's relists: after a 410 Expired, and on request; each diffed against what it holds. */
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  expired,
  type FakeWatch,
  flush,
  Harness,
  pod,
  stopHarnesses,
  unavailable,
} from './reflector.fixture.js';

afterEach(stopHarnesses);

describe('Reflector: 410 Expired', () => {
  async function relistAfter(trigger: (w: Harness, watch: FakeWatch) => void): Promise<Harness> {
    const h = new Harness();
    const w1 = await h.started([pod('a', '1'), pod('b', '2'), pod('c', '3'), pod('e', '4')]);
    h.clock += 10_000;
    w1.emit({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '20' } } });
    h.log.length = 0;
    trigger(h, w1);
    const list = await h.list(2);
    expect(list).toMatchObject({ resource: 'pods', namespace: 'ns', labelSelector: 'app=x' });
    expect(h.reflector.state).toBe('listing');
    // a unchanged, b changed, c gone, d new, e now Failed (projection undefined).
    list.respond([pod('a', '1'), pod('b', '25'), pod('d', '26'), pod('e', '27', 'Failed')], '30');
    const w2 = await h.watch(2);
    expect(w2.options.resourceVersion).toBe('30');
    expect(h.log).toEqual([
      'delete ns/c (was 3)',
      'delete ns/e (was 4)',
      'upsert ns/b 25 (was 2)',
      'upsert ns/d 26',
      'synced expired',
    ]);
    // The unchanged object was neither reported nor projected again.
    expect(h.projected).toEqual(['b', 'd', 'e']);
    expect([...h.reflector.keys()].sort()).toEqual(['ns/a', 'ns/b', 'ns/d']);
    expect(h.relists.at(-1)).toEqual({ reason: 'expired', upserted: 2, deleted: 2, detail: undefined });
    expect(h.restarts).toEqual(['expired']);
    expect(h.port.lists).toHaveLength(2);
    expect(h.sleeps).toEqual([]);
    expect(h.errors).toEqual([]);
    return h;
  }

  it('relists once on an ERROR event with code 410, diffed as mark and sweep', async () => {
    await relistAfter((_h, w) => {
      w.emit({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } });
      expect(w.stopped).toBe(true);
    });
  });

  it('relists on an ERROR event whose reason is Gone without a code', async () => {
    await relistAfter((_h, w) => {
      w.emit({ type: 'ERROR', object: { reason: 'Gone' } });
    });
  });

  it('relists when the watch request is refused with 410', async () => {
    await relistAfter((_h, w) => {
      w.fail(expired());
    });
  });

  it('backs off before relisting when the version of a fresh list expires at once', async () => {
    const h = new Harness();
    const w1 = await h.started([pod('a', '1')]);
    w1.fail(expired());
    (await h.list(2)).respond([pod('a', '1')], '40');
    expect(h.sleeps).toEqual([800]);
    const w2 = await h.watch(2);
    w2.fail(expired());
    await h.list(3);
    expect(h.sleeps).toEqual([800, 1600]);
  });
});

describe('Reflector: relist on request', () => {
  it('stops the watch, relists with a diff, reports synced requested and resolves', async () => {
    const h = new Harness();
    const w1 = await h.started([pod('a', '1'), pod('b', '2')]);
    let done = false;
    const relisted = h.reflector.relist('downstream lost').then(() => (done = true));
    expect(w1.stopped).toBe(true);
    const list = await h.list(2);
    await flush();
    expect(done).toBe(false);
    list.respond([pod('a', '1'), pod('b', '3')], '20');
    await relisted;
    expect(h.log).toEqual(['upsert ns/b 3 (was 2)', 'synced requested']);
    const w2 = await h.watch(2);
    expect(w2.options.resourceVersion).toBe('20');
    expect(h.relists.at(-1)).toEqual({
      reason: 'requested',
      upserted: 1,
      deleted: 0,
      detail: 'downstream lost',
    });
    expect(h.restarts).toEqual([]);
    expect(h.sleeps).toEqual([]);
  });

  it('waits for the next list when asked during one; requests before it share it', async () => {
    const h = new Harness();
    h.reflector.start();
    const beforeSync = h.reflector.relist();
    (await h.list(1)).respond([pod('a', '1')], '10');
    await beforeSync; // the first list serves
    await h.watch(1);
    expect(h.port.lists).toHaveLength(1);

    const first = h.reflector.relist();
    const second = await h.list(2);
    let laterDone = false;
    const later = Promise.all([h.reflector.relist(), h.reflector.relist()]).then(() => (laterDone = true));
    second.respond([pod('a', '1')], '20');
    await first;
    await flush();
    expect(laterDone).toBe(false);
    (await h.list(3)).respond([], '21');
    await later;
    await h.watch(2);
    expect(h.port.lists).toHaveLength(3);
    expect(h.log.filter((l) => l.startsWith('synced'))).toEqual([
      'synced start',
      'synced requested',
      'synced requested',
    ]);
    expect(h.reflector.size).toBe(0);
  });

  it('keeps a requested relist through failed lists, and rejects it on stop', async () => {
    const h = new Harness();
    await h.started([pod('a', '1')]);
    const relisted = h.reflector.relist();
    (await h.list(2)).fail(unavailable());
    (await h.list(3)).fail(unavailable());
    await h.list(4);
    expect(h.sleeps).toEqual([800, 1600]);
    await h.reflector.stop();
    await expect(relisted).rejects.toThrow(/stopped before the relist/);
    await expect(h.reflector.relist()).rejects.toThrow(/is stopped/);
  });
});
