/** This checkout's files as the deployment tests read them: the repository root, text by path, the worker's command, the settings table. */
import { readFile, readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from '@jest/globals';

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export const read = (path: string): Promise<string> => readFile(join(repo, path), 'utf8');

/** `npm run start:worker` as argv: the one place the worker's Node flags are chosen. */
export async function workerCommand(): Promise<string[]> {
  const pkg = JSON.parse(await read('package.json')) as { scripts: Record<string, string> };
  return (pkg.scripts['start:worker'] ?? '').split(/\s+/);
}

/** Every variable the settings table of docs/operations.md names (first column, in backticks). */
export async function settingsTable(): Promise<Set<string>> {
  const lines = (await read('docs/operations.md')).split('\n');
  const start = lines.findIndex((l) => /^\|\s*Variable\s*\|/.test(l));
  expect(start).toBeGreaterThan(0);
  const names = new Set<string>();
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const first = line.split('|')[1] ?? '';
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) if (m[1]) names.add(m[1]);
  }
  return names;
}

export async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p)));
    else out.push(p);
  }
  return out;
}
