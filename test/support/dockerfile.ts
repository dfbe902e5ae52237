/**
 * The Dockerfile read without a container engine: its stages and instructions, and the image's /app
 * assembled as its build stage leaves it, from this checkout's dist and node_modules.
 */
import { cp, mkdir, readdir, symlink } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { expect } from '@jest/globals';
import { read, repo } from './repo-files.js';

export interface Instruction {
  op: string;
  args: string;
}
export interface Stage {
  from: string;
  name: string | undefined;
  steps: Instruction[];
}

/** Instructions with continuation lines joined and comments dropped; ARG defaults substituted in FROM. */
export function parseDockerfile(text: string): Stage[] {
  const joined = text
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ');
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const line of joined.split('\n')) {
    const m = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!m?.[1]) continue;
    const op = m[1];
    const rest = (m[2] ?? '').trim();
    if (op === 'ARG' && stages.length === 0) {
      const [k, v] = rest.split('=');
      if (k && v !== undefined) args[k] = v;
    } else if (op === 'FROM') {
      const [image = '', as, name] = rest.split(/\s+/);
      const from = image.replace(/\$\{(\w+)\}/g, (_, k: string) => args[k] ?? '');
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : undefined, steps: [] });
    } else {
      stages.at(-1)?.steps.push({ op, args: rest });
    }
  }
  return stages;
}

/** What the stage's ENV instructions set. */
export function stageEnv(stage: Stage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of stage.steps.filter((x) => x.op === 'ENV')) {
    for (const m of s.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) {
      if (m[1] && m[2]) out[m[1]] = m[2].replace(/^"|"$/g, '');
    }
  }
  return out;
}

export function execForm(stage: Stage, op: string): string[] {
  const step = stage.steps.filter((s) => s.op === op).at(-1);
  expect(step).toBeDefined();
  return JSON.parse(step?.args ?? '[]') as string[];
}

/** `find -name` patterns the Dockerfile deletes from the image, as regular expressions. */
export function deletedPatterns(stage: Stage): RegExp[] {
  const find = stage.steps.find((s) => s.op === 'RUN' && s.args.includes('find /out'));
  expect(find).toBeDefined();
  return [...(find?.args ?? '').matchAll(/-name '([^']+)'/g)].map(
    (m) => new RegExp(`^${(m[1] ?? '').replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`),
  );
}

interface LockPackage {
  dev?: boolean;
  link?: boolean;
  resolved?: string;
}

/**
 * The image's /app, as the build stage leaves /out: package.json; node_modules without what the lockfile
 * marks dev-only (what `npm prune --omit=dev` removes), its packages linked to this checkout's copies and
 * the workspaces linked inside; per workspace its package.json and dist, minus what `find` deletes.
 */
export async function assembleImage(dest: string, build: Stage): Promise<void> {
  const lock = JSON.parse(await read('package-lock.json')) as { packages: Record<string, LockPackage> };
  await cp(join(repo, 'package.json'), join(dest, 'package.json'));
  await mkdir(join(dest, 'node_modules'));
  for (const [key, pkg] of Object.entries(lock.packages)) {
    // Top-level packages only: nested ones come along inside their parent.
    const m = /^node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(key);
    if (!m?.[1] || pkg.dev) continue;
    const target = join(dest, 'node_modules', m[1]);
    await mkdir(dirname(target), { recursive: true });
    if (pkg.link && pkg.resolved) await symlink(relative(dirname(target), join(dest, pkg.resolved)), target);
    else await symlink(join(repo, key), target);
  }
  const drop = deletedPatterns(build);
  for (const group of ['libs', 'apps']) {
    for (const ws of await readdir(join(repo, group))) {
      const from = join(repo, group, ws);
      const to = join(dest, group, ws);
      await mkdir(to, { recursive: true });
      await cp(join(from, 'package.json'), join(to, 'package.json'));
      await cp(join(from, 'dist'), join(to, 'dist'), {
        recursive: true,
        filter: (src) => !drop.some((re) => re.test(src.split('/').at(-1) ?? '')),
      });
    }
  }
}
