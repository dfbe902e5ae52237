import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { StoreEvent } from '../store.js';
import type { KubeObject } from '../types.js';
import {
  type Harness,
  container,
  eventually,
  isPodReady,
  podTemplate,
  startHarness,
  status,
} from './test-harness.js';

let h: Harness;
beforeEach(() => {
  h = startHarness();
});
afterEach(() => {
  h.stop();
});

interface StsStatus {
  observedGeneration?: number;
  replicas: number;
  readyReplicas?: number;
  currentReplicas?: number;
  updatedReplicas?: number;
  availableReplicas: number;
  currentRevision?: string;
  updateRevision?: string;
}

function createSts(name: string, replicas: number, spec: Record<string, unknown> = {}): KubeObject {
  return h.create('apps', 'statefulsets', {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name },
    spec: {
      replicas,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: podTemplate({ app: name }, [container()]),
      ...spec,
    },
  });
}

const stsStatus = (name: string) =>
  (h.get('apps', 'statefulsets', name)?.['status'] ?? {}) as Partial<StsStatus>;

function settled(name: string, replicas: number): StsStatus | false {
  const sts = h.get('apps', 'statefulsets', name);
  const s = stsStatus(name);
  const ok =
    sts &&
    s.observedGeneration === sts.metadata.generation &&
    s.replicas === replicas &&
    s.readyReplicas === replicas &&
    s.updatedReplicas === replicas &&
    s.currentRevision === s.updateRevision &&
    h.pods((p) => p.metadata.name.startsWith(`${name}-`)).length === replicas;
  return ok ? (s as StsStatus) : false;
}

const podEvents = (seen: StoreEvent[], type: StoreEvent['type']) =>
  seen.filter((e) => e.resource.plural === 'pods' && e.type === type).map((e) => e.object.metadata.name);

describe('StatefulSet controller', () => {
  it('creates ordinals one at a time, each after the previous is Running and Ready', async () => {
    const seen = h.record();
    createSts('db', 3);
    const s = await eventually(() => settled('db', 3), 'db settled');
    expect(podEvents(seen, 'ADDED')).toEqual(['db-0', 'db-1', 'db-2']);
    // When db-<n> was created, db-<n-1> was already ready.
    const readyAt = new Map<string, number>();
    seen.forEach((e, i) => {
      if (e.resource.plural === 'pods' && isPodReady(e.object) && !readyAt.has(e.object.metadata.name))
        readyAt.set(e.object.metadata.name, i);
    });
    const addedAt = (n: string) => seen.findIndex((e) => e.type === 'ADDED' && e.object.metadata.name === n);
    expect(readyAt.get('db-0')!).toBeLessThan(addedAt('db-1'));
    expect(readyAt.get('db-1')!).toBeLessThan(addedAt('db-2'));

    const p = h.get('', 'pods', 'db-1')!;
    expect(p.metadata.labels).toMatchObject({
      app: 'db',
      'statefulset.kubernetes.io/pod-name': 'db-1',
      'apps.kubernetes.io/pod-index': '1',
      'controller-revision-hash': s.updateRevision,
    });
    expect(p['spec']).toMatchObject({ hostname: 'db-1', subdomain: 'db' });
    expect(s).toMatchObject({
      replicas: 3,
      readyReplicas: 3,
      currentReplicas: 3,
      updatedReplicas: 3,
      availableReplicas: 3,
    });
    expect(s.updateRevision).toMatch(/^db-[bcdfghjklmnpqrstvwxz2456789]{10}$/);
    expect(h.store.get(h.type('apps', 'controllerrevisions'), h.namespace, s.updateRevision!)).toBeDefined();
    expect(h.events('db').map((e) => e['message'])).toContain('create Pod db-0 in StatefulSet db successful');
  });

  it('re-creates a deleted pod under the same name', async () => {
    createSts('keep', 2);
    await eventually(() => settled('keep', 2), 'settled');
    const old = h.get('', 'pods', 'keep-1')!;
    h.store.delete(h.type('', 'pods'), h.namespace, 'keep-1');
    await eventually(() => {
      const p = h.get('', 'pods', 'keep-1');
      return p && p.metadata.uid !== old.metadata.uid && isPodReady(p);
    }, 'keep-1 back');
  });

  it('rolls a template change from the highest ordinal down', async () => {
    createSts('roll', 3);
    const before = await eventually(() => settled('roll', 3), 'settled');
    const seen = h.record();
    const sts = structuredClone(h.get('apps', 'statefulsets', 'roll')!);
    (
      sts['spec'] as { template: { spec: { containers: { image: string }[] } } }
    ).template.spec.containers[0]!.image = 'nginx:1.26';
    h.store.replace(h.type('apps', 'statefulsets'), sts);
    const after = await eventually(() => {
      const s = settled('roll', 3);
      return s && s.updateRevision !== before.updateRevision ? s : false;
    }, 'rolled');
    expect(after.currentRevision).toBe(after.updateRevision);
    expect(podEvents(seen, 'DELETED')).toEqual(['roll-2', 'roll-1', 'roll-0']);
    for (const p of h.pods())
      expect(p.metadata.labels?.['controller-revision-hash']).toBe(after.updateRevision);
  });

  it('scales down from the highest ordinal', async () => {
    createSts('shrink', 3);
    await eventually(() => settled('shrink', 3), 'settled');
    const seen = h.record();
    const sts = structuredClone(h.get('apps', 'statefulsets', 'shrink')!);
    (sts['spec'] as { replicas: number }).replicas = 1;
    h.store.replace(h.type('apps', 'statefulsets'), sts);
    await eventually(() => settled('shrink', 1), 'scaled down');
    expect(podEvents(seen, 'DELETED')).toEqual(['shrink-2', 'shrink-1']);
    expect(h.get('', 'pods', 'shrink-0')).toBeDefined();
  });

  it('starts all pods at once with Parallel management', async () => {
    const seen = h.record();
    createSts('par', 3, { podManagementPolicy: 'Parallel' });
    await eventually(() => settled('par', 3), 'settled');
    const added = seen.filter((e) => e.resource.plural === 'pods' && e.type === 'ADDED');
    const firstReady = seen.findIndex((e) => e.resource.plural === 'pods' && isPodReady(e.object));
    expect(added).toHaveLength(3);
    expect(added.every((e) => seen.indexOf(e) < firstReady)).toBe(true);
  });

  it('creates claims from volumeClaimTemplates', async () => {
    createSts('data', 1, {
      volumeClaimTemplates: [
        {
          metadata: { name: 'store' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        },
      ],
    });
    await eventually(() => settled('data', 1), 'settled');
    const pvc = h.get('', 'persistentvolumeclaims', 'store-data-0');
    expect(status(pvc).phase).toBe('Bound');
    expect((h.get('', 'pods', 'data-0')!['spec'] as { volumes: unknown[] }).volumes).toContainEqual({
      name: 'store',
      persistentVolumeClaim: { claimName: 'store-data-0' },
    });
  });
});
