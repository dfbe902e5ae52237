// The architecture's import rules, checked by `npm run lint`: only libs/kube/src/client-node talks to
// client-node (tests and the bench excepted), no lib imports an app, no workspace imports one that imports
// it back, and the simulated cluster imports nothing of the service but the object types (it is the oracle
// the service is tested against).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = dirname(fileURLToPath(import.meta.url));
const APPS = readdirSync(join(ROOT, 'apps')).map((a) => `@opi/${a}`);

/** `libs/state/src/x.ts` → `@opi/state`; undefined outside a workspace's sources. */
function workspaceOf(file) {
  const [top, name, src] = relative(ROOT, file).split(sep);
  return (top === 'libs' || top === 'apps') && src === 'src' && name ? `@opi/${name}` : undefined;
}

function* sources(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (entry.endsWith('.ts') && !entry.endsWith('.test.ts')) yield path;
  }
}

const IMPORT = /(?:from|import)\s*\(?\s*'(@opi\/[a-z-]+)'/g;
let graph;

/** Which workspaces each workspace's sources import (tests aside), read once per lint run. */
function workspaceGraph() {
  if (graph) return graph;
  graph = new Map();
  for (const top of ['libs', 'apps']) {
    for (const name of readdirSync(join(ROOT, top))) {
      const src = join(ROOT, top, name, 'src');
      const deps = new Set();
      try {
        for (const file of sources(src)) {
          for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) deps.add(m[1]);
        }
      } catch {
        continue; // a workspace without sources
      }
      deps.delete(`@opi/${name}`);
      graph.set(`@opi/${name}`, deps);
    }
  }
  return graph;
}

/** A path from `from` to `to` in the workspace graph, or undefined. */
function pathBetween(from, to, seen = new Set()) {
  if (from === to) return [to];
  if (seen.has(from)) return undefined;
  seen.add(from);
  for (const next of workspaceGraph().get(from) ?? []) {
    const rest = pathBetween(next, to, seen);
    if (rest) return [from, ...rest];
  }
  return undefined;
}

const noWorkspaceCycles = {
  meta: {
    type: 'problem',
    docs: { description: 'A workspace may not import one that (through others) imports it back.' },
    messages: { cycle: 'Import cycle between workspaces: {{path}}.' },
    schema: [],
  },
  create(context) {
    const own = workspaceOf(context.filename);
    if (!own) return {};
    const check = (node) => {
      const target = node.source?.value;
      if (typeof target !== 'string' || !target.startsWith('@opi/') || target === own) return;
      const back = pathBetween(target, own);
      if (back) context.report({ node, messageId: 'cycle', data: { path: [own, ...back].join(' → ') } });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

const CLIENT_NODE = {
  name: '@kubernetes/client-node',
  message: 'Only libs/kube/src/client-node talks to client-node: use the KubernetesPort from @opi/kube.',
};
const NO_APPS = {
  paths: APPS.map((name) => ({ name, message: 'A lib may not import an app.' })),
  patterns: [{ group: ['**/apps/*/src/**', '**/apps/*/dist/**'], message: 'A lib may not import an app.' }],
};
const SIMULATOR_ALONE = {
  patterns: [
    {
      group: ['@opi/*', '!@opi/kube-sim', '!@opi/kube-objects'],
      message:
        'libs/kube-sim models Kubernetes on its own: it may not import the service it tests (the object types of @opi/kube-objects aside).',
    },
  ],
};
const SOURCES = ['apps/*/src/**/*.ts', 'libs/*/src/**/*.ts'];
const TESTS = ['**/*.test.ts'];

// Later blocks override earlier ones for the files they match (a flat config replaces a rule's options).
export const boundaries = [
  { plugins: { opi: { rules: { 'no-workspace-cycles': noWorkspaceCycles } } } },
  {
    files: SOURCES,
    ignores: TESTS,
    rules: {
      'no-restricted-imports': ['error', { paths: [CLIENT_NODE] }],
      'opi/no-workspace-cycles': 'error',
    },
  },
  {
    files: ['libs/*/src/**/*.ts'],
    ignores: TESTS,
    rules: { 'no-restricted-imports': ['error', { ...NO_APPS, paths: [CLIENT_NODE, ...NO_APPS.paths] }] },
  },
  {
    files: ['libs/kube/src/client-node/**/*.ts'],
    ignores: TESTS,
    rules: { 'no-restricted-imports': ['error', NO_APPS] },
  },
  {
    files: ['libs/kube-sim/src/**/*.ts'],
    ignores: TESTS,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [CLIENT_NODE, ...NO_APPS.paths],
          patterns: [...NO_APPS.patterns, ...SIMULATOR_ALONE.patterns],
        },
      ],
    },
  },
];
