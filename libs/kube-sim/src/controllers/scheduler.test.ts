import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { KubeObject } from '../types.js';
import { parseQuantity } from './quantity.js';
import { type Harness, container, eventually, startHarness, status } from './test-harness.js';

let h: Harness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.stop();
});

function createPod(name: string, memory: string): KubeObject {
  return h.create('', 'pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [container({ resources: { requests: { memory } } })] },
  });
}
const nodeOf = (name: string) =>
  (h.get('', 'pods', name)?.['spec'] as { nodeName?: string } | undefined)?.nodeName;

describe('nodes and scheduler', () => {
  it('creates the configured nodes, Ready, with capacity', () => {
    const nodes = h.store.all(h.type('', 'nodes'));
    expect(nodes.map((n) => n.metadata.name).sort()).toEqual([
      'kubesim-node-0',
      'kubesim-node-1',
      'kubesim-node-2',
    ]);
    const s = nodes[0]!['status'] as {
      capacity: Record<string, string>;
      allocatable: Record<string, string>;
      conditions: { type: string; status: string }[];
      addresses: { type: string; address: string }[];
    };
    expect(s.allocatable).toMatchObject({
      cpu: '8',
      memory: '32Gi',
      'ephemeral-storage': '100Gi',
      pods: '110',
    });
    expect(s.capacity).toEqual(s.allocatable);
    expect(s.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(s.addresses.map((a) => a.type)).toEqual(['InternalIP', 'Hostname']);
  });

  it('leaves a pod that fits nowhere Pending with FailedScheduling, as kube-scheduler words it', async () => {
    createPod('huge', '1000Gi');
    const message = '0/3 nodes are available: 3 Insufficient memory.';
    await eventually(
      () => h.events('huge').some((e) => e['reason'] === 'FailedScheduling'),
      'FailedScheduling',
    );
    const ev = h.events('huge').find((e) => e['reason'] === 'FailedScheduling')!;
    expect(ev).toMatchObject({ type: 'Warning', message, source: { component: 'default-scheduler' } });
    const s = status(h.get('', 'pods', 'huge'));
    expect(s.phase).toBe('Pending');
    expect(s.conditions).toEqual([
      expect.objectContaining({ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message }),
    ]);
    expect(nodeOf('huge')).toBeUndefined();
  });

  it('counts requests per node and schedules a waiting pod once room is freed', async () => {
    // Each node has 32Gi: three 20Gi pods take one node each, a fourth waits.
    for (const n of ['a', 'b', 'c']) createPod(n, '20Gi');
    await eventually(() => ['a', 'b', 'c'].every(nodeOf), 'three scheduled');
    expect(new Set(['a', 'b', 'c'].map(nodeOf)).size).toBe(3);
    createPod('d', '20Gi');
    await eventually(() => h.events('d').some((e) => e['reason'] === 'FailedScheduling'), 'd unschedulable');
    h.store.delete(h.type('', 'pods'), h.namespace, 'a', { gracePeriodSeconds: 0 });
    await eventually(() => nodeOf('d'), 'd scheduled after a went');
    expect(h.events('d').map((e) => e['reason'])).toContain('Scheduled');
  });

  it('parses quantities', () => {
    expect(parseQuantity('512Mi')).toBe(512 * 2 ** 20);
    expect(parseQuantity('1G')).toBe(1e9);
    expect(parseQuantity('100m')).toBeCloseTo(0.1);
    expect(parseQuantity('2')).toBe(2);
    expect(parseQuantity('1.5Gi')).toBe(1.5 * 2 ** 30);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity('lots')).toBeUndefined();
  });
});
