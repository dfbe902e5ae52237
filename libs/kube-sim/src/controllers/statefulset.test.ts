import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { StoreEvent } from '../store.js';
import type { KubeObject } from '../types.js';
import { logText } from './container-logs.js';
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
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.stop();
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

  it("tells each pod's container its ordinal and uid through the downward API (KUBESIM_PRINT_ENV)", async () => {
    const fieldRef = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { fieldPath } } });
    createSts('idx', 3, {
      podManagementPolicy: 'Parallel',
      template: podTemplate({ app: 'idx' }, [
        container({
          env: [
            { name: 'KUBESIM_PRINT_ENV', value: '1' },
            fieldRef('CF_INSTANCE_INDEX', "metadata.labels['apps.kubernetes.io/pod-index']"),
            fieldRef('CF_INSTANCE_GUID', 'metadata.uid'),
            fieldRef('MISSING', "metadata.labels['no-such-label']"),
            { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
          ],
        }),
      ]),
    });
    await eventually(() => settled('idx', 3), 'settled');
    for (const i of [0, 1, 2]) {
      const uid = h.get('', 'pods', `idx-${i}`)?.metadata.uid ?? '';
      const log = logText(h.controllers.logs({ namespace: h.namespace, name: `idx-${i}`, previous: false }));
      expect(log).toContain(
        `CF_INSTANCE_INDEX=${i}\nCF_INSTANCE_GUID=${uid}\nMISSING=\nFROM_SECRET=<from secretKeyRef>\n`,
      );
    }
  });
});

describe('StatefulSet rolling updates and the MaxUnavailableStatefulSet gate', () => {
  const setImage = (name: string, image: string): void => {
    const sts = structuredClone(h.get('apps', 'statefulsets', name)!);
    (
      sts['spec'] as { template: { spec: { containers: { image: string }[] } } }
    ).template.spec.containers[0]!.image = image;
    h.store.replace(h.type('apps', 'statefulsets'), sts);
  };
  const revisions = (name: string): (string | undefined)[] =>
    h
      .pods((p) => p.metadata.name.startsWith(`${name}-`))
      .map((p) => p.metadata.labels?.['controller-revision-hash']);
  const crashing = (name: string, n: number): boolean =>
    h
      .pods((p) => p.metadata.name.startsWith(`${name}-`))
      .filter((p) => (status(p).containerStatuses?.[0]?.restartCount ?? 0) > 0).length === n;
  const parallel = (maxUnavailable: number | string) => ({
    podManagementPolicy: 'Parallel',
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable } },
  });

  it('gate off (1.30): replaces crash-looping old pods one at a time, so a fixed image rolls out', async () => {
    createSts('fix', 3, {
      ...parallel('25%'),
      template: podTemplate({ app: 'fix' }, [container({ image: 'kubesim-crash:1' })]),
    });
    await eventually(() => crashing('fix', 3), 'all three crash-looping');
    setImage('fix', 'nginx:1.26');
    const s = await eventually(() => settled('fix', 3), 'rolled out over the crash loop');
    expect(revisions('fix')).toEqual([s.updateRevision, s.updateRevision, s.updateRevision]);
  });

  it('gate on: rolls healthy pods up to maxUnavailable at a time', async () => {
    await h.stop();
    h = await startHarness({ maxUnavailableStatefulSet: true });
    createSts('wide', 4, parallel(2));
    const before = await eventually(() => settled('wide', 4), 'settled');
    const seen = h.record();
    setImage('wide', 'nginx:1.26');
    const after = await eventually(() => {
      const s = settled('wide', 4);
      return s && s.updateRevision !== before.updateRevision ? s : false;
    }, 'rolled');
    // Two deletions began before any pod of the new revision was ready: two at a time.
    const pod = (e: StoreEvent) => (e.resource.plural === 'pods' ? e.object : undefined);
    const newReady = seen.findIndex((e) => {
      const p = pod(e);
      return p && isPodReady(p) && p.metadata.labels?.['controller-revision-hash'] === after.updateRevision;
    });
    const deleting = seen
      .map((e, i) => [pod(e), i] as const)
      .filter(([p]) => p?.metadata.deletionTimestamp)
      .map(([p, i]) => [p!.metadata.name, i] as const);
    const firstDeletes = [...new Map([...deleting].reverse()).entries()].sort(([, x], [, y]) => x - y);
    expect(
      firstDeletes
        .slice(0, 2)
        .map(([n]) => n)
        .sort(),
    ).toEqual(['wide-2', 'wide-3']);
    expect(firstDeletes.slice(0, 2).every(([, i]) => i < newReady)).toBe(true);
  });

  it('gate on: never replaces old pods that are not ready, so a fixed image never rolls out (kubernetes#137409)', async () => {
    await h.stop();
    h = await startHarness({ maxUnavailableStatefulSet: true });
    createSts('stuck', 3, {
      ...parallel('25%'),
      template: podTemplate({ app: 'stuck' }, [container({ image: 'kubesim-crash:1' })]),
    });
    await eventually(() => crashing('stuck', 3), 'all three crash-looping');
    const old = revisions('stuck');
    setImage('stuck', 'nginx:1.26');
    await eventually(() => {
      const s = stsStatus('stuck');
      return s.updateRevision !== undefined && s.updateRevision !== old[0];
    }, 'the new revision observed');
    await new Promise((r) => setTimeout(r, 500)); // many syncs and crash restarts later
    expect(revisions('stuck')).toEqual(old);
    // Deleting the old pods by hand (what the OPI server's converge does) lets the rollout through.
    for (const p of h.pods((x) => x.metadata.name.startsWith('stuck-')))
      h.store.delete(h.type('', 'pods'), h.namespace, p.metadata.name);
    const s = await eventually(() => settled('stuck', 3), 'rolled out once the old pods were deleted');
    expect(revisions('stuck')).toEqual([s.updateRevision, s.updateRevision, s.updateRevision]);
  });
});
