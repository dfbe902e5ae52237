import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { KubeObject } from '../types.js';
import { deletionOrder } from './replicaset.js';
import { type Harness, container, eventually, podTemplate, startHarness } from './test-harness.js';

function pod(
  name: string,
  opts: {
    node?: string;
    phase?: string;
    ready?: boolean;
    readySince?: string;
    restarts?: number;
    created?: string;
  },
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      uid: name,
      resourceVersion: '1',
      creationTimestamp: opts.created ?? '2024-01-01T00:00:00Z',
    },
    spec: { containers: [], ...(opts.node ? { nodeName: opts.node } : {}) },
    status: {
      phase: opts.phase ?? 'Pending',
      conditions: [
        {
          type: 'Ready',
          status: opts.ready ? 'True' : 'False',
          lastTransitionTime: opts.readySince ?? '2024-01-01T00:00:00Z',
        },
      ],
      containerStatuses: [{ restartCount: opts.restarts ?? 0 }],
    },
  };
}

describe('ReplicaSet scale-down order', () => {
  it('deletes unscheduled, then pending, then not-ready, then recently ready, restarting and newer pods first', () => {
    const pods = [
      pod('old-ready', { node: 'n', phase: 'Running', ready: true, readySince: '2024-01-01T00:00:00Z' }),
      pod('new-ready', { node: 'n', phase: 'Running', ready: true, readySince: '2024-01-01T01:00:00Z' }),
      pod('not-ready', { node: 'n', phase: 'Running', ready: false }),
      pod('pending', { node: 'n', phase: 'Pending' }),
      pod('unscheduled', {}),
      pod('restarting', { node: 'n', phase: 'Running', ready: false, restarts: 5 }),
    ];
    expect(pods.sort(deletionOrder).map((p) => p.metadata.name)).toEqual([
      'unscheduled',
      'pending',
      'restarting',
      'not-ready',
      'new-ready',
      'old-ready',
    ]);
  });
});

describe('ReplicaSet controller', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness();
  });
  afterEach(async () => {
    await h.stop();
  });

  it('replaces a deleted pod and reports status for a bare ReplicaSet', async () => {
    h.create('apps', 'replicasets', {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'bare' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'bare' } },
        template: podTemplate({ app: 'bare' }, [container()]),
      },
    });
    const status = () =>
      h.get('apps', 'replicasets', 'bare')?.['status'] as { readyReplicas?: number } | undefined;
    await eventually(() => status()?.readyReplicas === 2, 'two ready');
    const victim = h.pods()[0]!;
    h.store.delete(h.type('', 'pods'), h.namespace, victim.metadata.name);
    await eventually(
      () =>
        status()?.readyReplicas === 2 &&
        h.pods().length === 2 &&
        !h.pods().some((p) => p.metadata.uid === victim.metadata.uid),
      'replaced',
    );
  });
});
