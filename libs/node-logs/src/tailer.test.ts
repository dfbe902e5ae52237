import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { appendFileSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LogRecord } from './cri.js';
import { type ContainerLogFile, LogTailer } from './tailer.js';

const T0 = Date.parse('2026-12-07T16:00:00Z');
let n = 0;
/** A CRI record line, each 1 µs after the last. */
const record = (stream: 'stdout' | 'stderr', text: string, tag: 'F' | 'P' = 'F'): string => {
  const ns = BigInt(T0) * 1_000_000n + BigInt(++n) * 1000n;
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0');
  return `${new Date(Number(ns / 1_000_000n)).toISOString().slice(0, 19)}.${frac}Z ${stream} ${tag} ${text}\n`;
};

describe('LogTailer', () => {
  let root: string;
  let got: { file: ContainerLogFile; line: LogRecord }[];
  const tailers: LogTailer[] = [];
  const tailer = (opts: Partial<ConstructorParameters<typeof LogTailer>[0]> = {}) => {
    const t = new LogTailer({
      root,
      pollMs: 1_000_000, // polled by hand
      onLine: (file, line) => got.push({ file, line }),
      ...opts,
    });
    tailers.push(t);
    return t;
  };
  const dirOf = (pod: string, container = 'opi') => {
    const d = join(root, `ns_${pod}_uid-${pod}`, container);
    mkdirSync(d, { recursive: true });
    return d;
  };
  const texts = () => got.map((g) => g.line.text);

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'opi-node-logs-'));
    got = [];
  });
  afterEach(async () => {
    await Promise.all(tailers.splice(0).map((t) => t.stop()));
    rmSync(root, { recursive: true, force: true });
  });

  it('reads every container’s records, streams apart, partial records joined, nanoseconds kept', async () => {
    const a = dirOf('a');
    const b = dirOf('b', 'stage');
    const t = tailer({ firstStart: 'head' });
    appendFileSync(join(a, '0.log'), record('stdout', 'hello') + record('stderr', 'oops'));
    appendFileSync(join(b, '0.log'), record('stdout', 'par', 'P') + record('stdout', 'tial'));
    appendFileSync(join(a, '0.log'), record('stdout', 'not yet ended').slice(0, -1)); // no newline yet
    await t.start();
    expect(got.map((g) => [g.file.pod, g.file.container, g.line.stream, g.line.text])).toEqual([
      ['a', 'opi', 'stdout', 'hello'],
      ['a', 'opi', 'stderr', 'oops'],
      ['b', 'stage', 'stdout', 'partial'],
    ]);
    expect(got[0]?.file).toEqual({
      namespace: 'ns',
      pod: 'a',
      podUid: 'uid-a',
      container: 'opi',
      restart: 0,
    });
    expect(got[0]?.line.timeNs).toBe(BigInt(T0) * 1_000_000n + 1000n);
    appendFileSync(join(a, '0.log'), '\n');
    await t.pollOnce();
    expect(texts().at(-1)).toBe('not yet ended');
  });

  it('follows a file across rotations, in order, nothing lost or repeated', async () => {
    const d = dirOf('r');
    const t = tailer();
    await t.start();
    const want: string[] = [];
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 10; i++) {
        const text = `line ${round}.${i}`;
        want.push(text);
        appendFileSync(join(d, '0.log'), record('stdout', text));
      }
      if (round % 2 === 0) await t.pollOnce();
      // Rotated as the kubelet does: renamed, and the next line goes to a new file.
      renameSync(join(d, '0.log'), join(d, `0.log.20261207-16000${round}`));
    }
    await t.pollOnce();
    expect(texts()).toEqual(want);
  });

  it('resumes after a restart from its saved positions: 0 lost, 0 repeated', async () => {
    const d = dirOf('p');
    const positionsFile = join(root, 'positions.json');
    const first = tailer({ positionsFile, firstStart: 'head' });
    appendFileSync(join(d, '0.log'), record('stdout', 'one'));
    await first.start();
    await first.stop();
    appendFileSync(join(d, '0.log'), record('stdout', 'two'));
    renameSync(join(d, '0.log'), join(d, '0.log.20261207-160000'));
    appendFileSync(join(d, '0.log'), record('stdout', 'three'));
    const again = tailer({ positionsFile });
    await again.start();
    expect(texts()).toEqual(['one', 'two', 'three']);
  });

  it('starts at the end of what was there before its first start, and reads new files whole', async () => {
    const d = dirOf('old');
    appendFileSync(join(d, '0.log'), record('stdout', 'before the agent'));
    const t = tailer();
    await t.start();
    appendFileSync(join(d, '0.log'), record('stdout', 'after'));
    appendFileSync(join(dirOf('new'), '0.log'), record('stdout', 'a new pod'));
    appendFileSync(join(d, '1.log'), record('stdout', 'a restarted container'));
    await t.pollOnce();
    // Pods in any order; one container's runs in order.
    expect(got.filter((g) => g.file.pod === 'old').map((g) => [g.file.restart, g.line.text])).toEqual([
      [0, 'after'],
      [1, 'a restarted container'],
    ]);
    expect(got.filter((g) => g.file.pod === 'new').map((g) => g.line.text)).toEqual(['a new pod']);
  });

  it('forgets the files of a pod whose directory is gone, and counts lines that are not records', async () => {
    const d = dirOf('gone');
    let bad = 0;
    const gone: string[] = [];
    const t = tailer({ firstStart: 'head', onBadLine: () => bad++, onPodGone: (uid) => gone.push(uid) });
    appendFileSync(join(d, '0.log'), 'garbage\n' + record('stdout', 'ok'));
    await t.start();
    expect(texts()).toEqual(['ok']);
    expect(bad).toBe(1);
    expect(t.files).toBe(1);
    rmSync(join(root, 'ns_gone_uid-gone'), { recursive: true });
    await t.pollOnce();
    expect(t.files).toBe(0);
    expect(gone).toEqual(['uid-gone']);
  });
});
