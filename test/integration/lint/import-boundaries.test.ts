/**
 * The architecture's import rules (eslint-boundaries.mjs) fail the lint that `npm test` runs: the
 * project's own ESLint configuration, given a source file with a boundary broken on purpose.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ESLint } from 'eslint';

const ROOT = join(import.meta.dirname, '..', '..', '..');

async function lintAs(file: string, extra: string): Promise<{ rule: string | null; message: string }[]> {
  const eslint = new ESLint({ cwd: ROOT });
  const path = join(ROOT, file);
  const text = `${await readFile(path, 'utf8')}\n${extra}\n`;
  const [result] = await eslint.lintText(text, { filePath: path });
  return (result?.messages ?? []).map((m) => ({ rule: m.ruleId, message: m.message }));
}

describe('import boundaries', () => {
  it('client-node imported in libs/state fails the lint', async () => {
    const found = await lintAs(
      'libs/state/src/keys.ts',
      "import { KubeConfig } from '@kubernetes/client-node';\nexport const probe = KubeConfig;",
    );
    expect(found).toContainEqual({
      rule: 'no-restricted-imports',
      message: expect.stringContaining('Only libs/kube/src/client-node talks to client-node'),
    });
  }, 120_000);

  it('client-node imported in libs/kube outside its adapter fails the lint', async () => {
    const found = await lintAs(
      'libs/kube/src/reflector/backoff.ts',
      "import { KubeConfig } from '@kubernetes/client-node';\nexport const probe = KubeConfig;",
    );
    expect(found).toContainEqual({
      rule: 'no-restricted-imports',
      message: expect.stringContaining('Only libs/kube/src/client-node talks to client-node'),
    });
  }, 120_000);

  it('a lib importing an app, and a workspace cycle, fail the lint', async () => {
    const found = await lintAs(
      'libs/translation/src/labels.ts',
      "import { startWorker } from '@opi/worker';\nexport const probe = startWorker;",
    );
    expect(found).toContainEqual({
      rule: 'no-restricted-imports',
      message: expect.stringContaining('A lib may not import an app'),
    });
    expect(found).toContainEqual({
      rule: 'opi/no-workspace-cycles',
      message: expect.stringMatching(
        /^Import cycle between workspaces: @opi\/translation → @opi\/worker → .*@opi\/translation\.$/,
      ),
    });
  }, 120_000);

  it('the simulated cluster importing any of the service fails the lint', async () => {
    const found = await lintAs(
      'libs/kube-sim/src/random.ts',
      "import { processGuidOf } from '@opi/domain';\nexport const probe = processGuidOf;",
    );
    expect(found).toContainEqual({
      rule: 'no-restricted-imports',
      message: expect.stringContaining('libs/kube-sim models Kubernetes on its own'),
    });
    expect(await lintAs('libs/kube-sim/src/random.ts', '')).toEqual([]);
    // The object types are the one thing it may share with the service.
    expect(
      await lintAs(
        'libs/kube-sim/src/random.ts',
        "import type { Pod } from '@opi/kube-objects';\nexport type Probe = Pod;",
      ),
    ).toEqual([]);
  }, 120_000);

  it('the adapter may import client-node, and the tree as it is passes', async () => {
    expect(await lintAs('libs/kube/src/client-node/kubeconfig.ts', '')).toEqual([]);
    expect(await lintAs('libs/state/src/keys.ts', '')).toEqual([]);
  }, 120_000);
});
