import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { KubeObject } from '../types.js';
import { type Harness, deploymentBody, eventually, startHarness } from './test-harness.js';

/** 3,000 by default to keep the unit suite quick; KUBESIM_SCALE_COUNT=10000 runs the full-size check (about 15 s). */
const COUNT = Number(process.env['KUBESIM_SCALE_COUNT'] ?? 3_000);

let h: Harness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.stop();
});

describe('controllers at scale', () => {
  it(`brings ${COUNT} one-replica Deployments to ready`, async () => {
    const started = Date.now();
    for (let i = 0; i < COUNT; i++) h.create('apps', 'deployments', deploymentBody(`app-${i}`, 1));
    const deployments = h.type('apps', 'deployments');
    const ready = (d: KubeObject) =>
      (d['status'] as { availableReplicas?: number } | undefined)?.availableReplicas === 1;
    await eventually(() => h.store.all(deployments).every(ready), `${COUNT} deployments available`, 120_000);
    expect(h.pods()).toHaveLength(COUNT);
    process.stdout.write(`${COUNT} deployments ready in ${Date.now() - started} ms\n`);
  }, 180_000);
});
