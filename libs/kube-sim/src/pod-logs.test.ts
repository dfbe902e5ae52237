import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, readdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_BEHAVIOUR } from './behaviour.js';
import { parseRfc3339Ns } from './controllers/container-log.js';
import { type Simulator, startSimulator } from './index.js';

const CRI_LINE = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z) (stdout|stderr) (F|P) (.*)$/;

async function until<T>(check: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('simulated container logs', () => {
  let sim: Simulator;
  let dir: string;
  const call = (path: string, init: { method?: string; body?: object } = {}) =>
    fetch(`${sim.httpUrl}${path}`, {
      method: init.method ?? (init.body ? 'POST' : 'GET'),
      headers: { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' },
      ...(init.body ? { body: JSON.stringify(init.body) } : {}),
    });
  const pod = (name: string, env: Record<string, string> = {}) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      containers: [
        { name: 'app', image: 'a:1', env: Object.entries(env).map(([n, value]) => ({ name: n, value })) },
      ],
    },
  });
  const running = (name: string) =>
    until(async () => {
      const p = (await (await call(`/api/v1/namespaces/default/pods/${name}`)).json()) as {
        metadata: { uid: string };
        status?: { containerStatuses?: { state?: { running?: object } }[] };
      };
      return p.status?.containerStatuses?.[0]?.state?.running ? p.metadata.uid : undefined;
    }, `${name} running`);
  const criFile = (name: string, uid: string) => join(dir, `default_${name}_${uid}`, 'app', '0.log');
  const criLines = (file: string) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => CRI_LINE.exec(l))
      .map((m) => ({ time: m?.[1] ?? '', stream: m?.[2], tag: m?.[3], text: m?.[4] }));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kubesim-pod-logs-'));
    sim = await startSimulator({
      servePods: false,
      behaviour: {
        ...FAST_BEHAVIOUR,
        podLogFiles: { dir, maxBytes: 4096, maxFiles: 3, retainMs: 100 },
      },
    });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('writes CRI log files: nanosecond times, stdout and stderr apart, the lines a test asks for', async () => {
    await call('/api/v1/namespaces/default/pods', {
      body: pod('talker', { KUBESIM_LOG: 'hello', KUBESIM_LOG_ERR: 'oops' }),
    });
    const uid = await running('talker');
    const lines = Array.from({ length: 50 }, (_, i) => ({
      stream: i % 5 === 0 ? 'stderr' : 'stdout',
      text: `line ${i}`,
    }));
    const written = await call('/sim/pods/default/talker/log', { body: { lines } });
    expect(await written.json()).toEqual({ written: 50 });
    const file = criLines(criFile('talker', uid));
    expect(file.slice(1, 3)).toMatchObject([
      { stream: 'stdout', tag: 'F', text: 'hello' },
      { stream: 'stderr', tag: 'F', text: 'oops' },
    ]);
    expect(file.slice(3).map((l) => [l.stream, l.text])).toEqual(lines.map((l) => [l.stream, l.text]));
    const times = file.map((l) => parseRfc3339Ns(l.time) ?? 0n);
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThan(times[i - 1] ?? 0n);

    // pods/log merges the streams, and with timestamps shows the same nanoseconds.
    const text = await (await call('/api/v1/namespaces/default/pods/talker/log?timestamps=true')).text();
    const shown = text.split('\n').filter(Boolean);
    expect(shown).toHaveLength(file.length);
    expect(shown[3]).toBe(`${file[3]?.time ?? ''} line 0`);
    // sinceTime keeps its nanoseconds: from line 10 on.
    const since = file[13]?.time ?? '';
    const from = await (await call(`/api/v1/namespaces/default/pods/talker/log?sinceTime=${since}`)).text();
    expect(from.split('\n')[0]).toBe('line 10');
    const tail = await (await call('/api/v1/namespaces/default/pods/talker/log?tailLines=2')).text();
    expect(tail).toBe('line 48\nline 49\n');
    // A line longer than 16 KiB is split into partial records, as containerd does.
    await call('/sim/pods/default/talker/log', { body: { lines: [{ text: 'x'.repeat(40_000) }] } });
    const long = criLines(criFile('talker', uid)).slice(-3);
    expect(long.map((l) => [l.tag, l.text?.length])).toEqual([
      ['P', 16_384],
      ['P', 16_384],
      ['F', 40_000 - 2 * 16_384],
    ]);
    const bad = await call('/api/v1/namespaces/default/pods/talker/log?sinceTime=yesterday');
    expect(bad.status).toBe(400);
    const refused = await call('/sim/pods/default/talker/log', {
      body: { lines: [{ stream: 'stdin', text: 'x' }] },
    });
    expect(refused.status).toBe(400);
  });

  it('follows a running container, and ends the follow when it stops', async () => {
    await call('/api/v1/namespaces/default/pods', { body: pod('ticker', { KUBESIM_LOG_EVERY_MS: '20' }) });
    await running('ticker');
    const res = await call('/api/v1/namespaces/default/pods/ticker/log?follow=true');
    const reader = res.body?.getReader();
    let text = '';
    const decoder = new TextDecoder();
    while (!/line 3\n/.test(text)) {
      const chunk = await reader?.read();
      if (!chunk || chunk.done) break;
      text += decoder.decode(chunk.value as Uint8Array);
    }
    expect(text).toMatch(
      /kubesim: ticker app line 1\nkubesim: ticker app line 2\nkubesim: ticker app line 3\n/,
    );
    await call('/api/v1/namespaces/default/pods/ticker', { method: 'DELETE' });
    for (;;) {
      const chunk = await reader?.read();
      if (!chunk || chunk.done) break;
      text += decoder.decode(chunk.value as Uint8Array);
    }
    expect(text).toMatch(/received SIGTERM/);
  });

  it('rotates a CRI file at its size, keeping maxFiles, and removes a gone pod’s directory', async () => {
    await call('/api/v1/namespaces/default/pods', { body: pod('chatty') });
    const uid = await running('chatty');
    const lines = Array.from({ length: 400 }, (_, i) => ({ stream: 'stdout', text: `chatty line ${i}` }));
    await call('/sim/pods/default/chatty/log', { body: { lines } });
    const appDir = join(dir, `default_chatty_${uid}`, 'app');
    const files = readdirSync(appDir).sort();
    expect(files).toHaveLength(3);
    expect(files.filter((f) => f === '0.log')).toHaveLength(1);
    expect(files.filter((f) => /^0\.log\.\d{8}-\d{6}(\.\d+)?$/.test(f))).toHaveLength(2);
    const last = criLines(join(appDir, '0.log'));
    expect(last.at(-1)?.text).toBe('chatty line 399');
    await call('/api/v1/namespaces/default/pods/chatty', { method: 'DELETE' });
    await until(
      () => (existsSync(join(dir, `default_chatty_${uid}`)) ? undefined : true),
      'the pod dir removed',
    );
  });
});
