/** What a reflector holds: projections, resource versions as the server sent them, and no list answer. */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Harness, pod, stopHarnesses } from './reflector.fixture.js';

afterEach(stopHarnesses);

describe('Reflector: memory', () => {
  it("keeps nothing of a list's answer once applied, however many lists it made", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const h = new Harness();
    const w = await h.started([pod('a', '3'), pod('b', '5')]);
    w.emit({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } });
    (await h.list(2)).respond([pod('a', '3'), pod('c', '8')], '12');
    await h.watch(2);
    expect(h.port.answers).toHaveLength(2);
    // The scripted port's requests hold their promises, so their answers; a real port's do not. And a
    // WeakRef holds its target to the end of the job that made it.
    h.port.lists.length = 0;
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(h.port.answers.map((a) => a.deref())).toEqual([undefined, undefined]);
    expect([...h.reflector.entries()].map(([k]) => k)).toEqual(['ns/a', 'ns/c']);
  });
});

describe('Reflector: resource versions', () => {
  it('compares opaque and numeric versions as the server sent them, across relists and events', async () => {
    const h = new Harness();
    const w = await h.started([pod('a', 'opaque-1'), pod('b', '007'), pod('c', '12')]);
    w.emit({ type: 'MODIFIED', object: pod('c', '12') });
    w.emit({ type: 'MODIFIED', object: pod('b', '7') });
    expect(h.log).toEqual(['upsert ns/b 7 (was 007)']);
    w.emit({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } });
    (await h.list(2)).respond([pod('a', 'opaque-1'), pod('b', '7'), pod('c', '13')], '20');
    await h.watch(2);
    expect(h.projected).toEqual(['b', 'c']);
    expect(h.log.slice(1)).toEqual(['upsert ns/c 13 (was 12)', 'synced expired']);
  });
});

describe('Reflector: projections', () => {
  it('holds only what the projection keeps, and deletes an object whose projection becomes undefined', async () => {
    const h = new Harness();
    const w = await h.started([pod('a', '1'), pod('f', '2', 'Failed')]);
    expect(h.reflector.size).toBe(1);
    expect(h.reflector.get('ns/f')).toBeUndefined();
    w.emit({ type: 'ADDED', object: pod('g', '11', 'Failed') });
    w.emit({ type: 'MODIFIED', object: pod('a', '12', 'Failed') });
    w.emit({ type: 'MODIFIED', object: pod('f', '13', 'Running') });
    expect(h.log).toEqual(['delete ns/a (was 1)', 'upsert ns/f 13']);
    expect([...h.reflector.keys()]).toEqual(['ns/f']);
    expect(h.reflector.resourceVersion).toBe('13');
  });
});
