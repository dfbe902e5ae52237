import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { KubeObject } from '../types.js';
import { fenceposts } from './deployment.js';
import {
  type Harness,
  container,
  deploymentBody,
  eventually,
  isPodReady,
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

interface DeployStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  unavailableReplicas?: number;
  conditions?: {
    type: string;
    status: string;
    reason: string;
    message: string;
    lastUpdateTime: string;
    lastTransitionTime: string;
  }[];
}

const dstatus = (d: KubeObject | undefined) => (d?.['status'] ?? {}) as DeployStatus;
const ownedBy = (uid: string) => (o: KubeObject) =>
  o.metadata.ownerReferences?.some((r) => r.uid === uid) ?? false;

function replicaSets(deploy: KubeObject): KubeObject[] {
  return h.store.all(h.type('apps', 'replicasets'), h.namespace).filter(ownedBy(deploy.metadata.uid));
}

function rolledOut(name: string, replicas: number): KubeObject | false {
  const d = h.get('apps', 'deployments', name);
  const s = dstatus(d);
  const done =
    d &&
    (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 1) &&
    s.replicas === replicas &&
    s.updatedReplicas === replicas &&
    s.availableReplicas === replicas &&
    s.readyReplicas === replicas;
  return done ? d : false;
}

describe('Deployment controller', () => {
  it('brings a 3-replica Deployment to 3 running, ready pods with upstream-shaped status', async () => {
    const created = h.create('apps', 'deployments', deploymentBody('web', 3));
    const d = await eventually(() => rolledOut('web', 3), 'web rolled out');

    const [rs, ...others] = replicaSets(d);
    expect(others).toHaveLength(0);
    const hash = rs!.metadata.labels?.['pod-template-hash'];
    expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{10}$/);
    expect(rs!.metadata.name).toBe(`web-${hash}`);
    expect(rs!.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('1');
    expect(d.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('1');
    expect(rs!.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: 'web',
        uid: created.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect((rs!['spec'] as { selector: unknown }).selector).toEqual({
      matchLabels: { app: 'web', 'pod-template-hash': hash },
    });
    expect(rs!['status']).toEqual({
      replicas: 3,
      fullyLabeledReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
      observedGeneration: 1,
    });

    const pods = h.pods(ownedBy(rs!.metadata.uid));
    expect(pods).toHaveLength(3);
    for (const p of pods) {
      expect(p.metadata.name).toMatch(new RegExp(`^web-${hash}-[bcdfghjklmnpqrstvwxz2456789]{5}$`));
      expect(p.metadata.labels).toEqual({ app: 'web', 'pod-template-hash': hash });
      expect(status(p).phase).toBe('Running');
      expect(isPodReady(p)).toBe(true);
      const cs = status(p).containerStatuses?.[0];
      expect(cs).toMatchObject({ name: 'app', ready: true, started: true, restartCount: 0, lastState: {} });
      expect(cs?.image).toBe('docker.io/library/nginx:1.25');
      expect(cs?.imageID).toMatch(/^docker\.io\/library\/nginx@sha256:[0-9a-f]{64}$/);
      expect(cs?.containerID).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);
      expect(cs?.state.running?.startedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(status(p).podIP).toMatch(new RegExp(`^127\\.${h.podRange.octet}\\.\\d+\\.\\d+$`));
      expect(status(p).hostIP).toMatch(/^172\.18\.\d+\.\d+$/);
    }
    expect(new Set(pods.map((p) => status(p).podIP)).size).toBe(3);

    const s = dstatus(d);
    expect(s.unavailableReplicas).toBeUndefined();
    const available = s.conditions?.find((c) => c.type === 'Available');
    const progressing = s.conditions?.find((c) => c.type === 'Progressing');
    expect(available).toMatchObject({
      status: 'True',
      reason: 'MinimumReplicasAvailable',
      message: 'Deployment has minimum availability.',
    });
    expect(progressing).toMatchObject({
      status: 'True',
      reason: 'NewReplicaSetAvailable',
      message: `ReplicaSet "web-${hash}" has successfully progressed.`,
    });
    expect(progressing?.lastUpdateTime).toBeDefined();
    expect(progressing?.lastTransitionTime).toBeDefined();

    const events = h.events('web').map((e) => `${String(e['reason'])}: ${String(e['message'])}`);
    expect(events).toContain(`ScalingReplicaSet: Scaled up replica set web-${hash} from 0 to 3`);
    const rsEvents = h.events(rs!.metadata.name).map((e) => String(e['reason']));
    expect(rsEvents.filter((r) => r === 'SuccessfulCreate')).toHaveLength(3);
  });

  it('rolls a template change out to a new ReplicaSet within maxSurge/maxUnavailable', async () => {
    h.create('apps', 'deployments', deploymentBody('roll', 4));
    const before = await eventually(() => rolledOut('roll', 4), 'first rollout');
    const oldRS = replicaSets(before)[0]!;
    const oldPods = new Set(h.pods(ownedBy(oldRS.metadata.uid)).map((p) => p.metadata.uid));

    // 25% of 4: one surge pod, one unavailable pod at most.
    const seen = h.record();
    const next = structuredClone(before);
    (
      next['spec'] as { template: { spec: { containers: { image: string }[] } } }
    ).template.spec.containers[0]!.image = 'nginx:1.26';
    h.store.replace(h.type('apps', 'deployments'), next);

    const after = await eventually(() => {
      const d = rolledOut('roll', 4);
      return d && replicaSets(d).length === 2 && h.pods().length === 4 ? d : false;
    }, 'second rollout');

    const newRS = replicaSets(after).find((rs) => rs.metadata.uid !== oldRS.metadata.uid)!;
    expect(newRS.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('2');
    expect(after.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('2');
    expect(
      (h.get('apps', 'replicasets', oldRS.metadata.name)!['spec'] as { replicas: number }).replicas,
    ).toBe(0);
    const pods = h.pods();
    expect(pods.every((p) => !oldPods.has(p.metadata.uid))).toBe(true);
    expect(
      pods.every(
        (p) => p.metadata.labels?.['pod-template-hash'] === newRS.metadata.labels?.['pod-template-hash'],
      ),
    ).toBe(true);

    // Never more than replicas + maxSurge ReplicaSet replicas, never fewer than replicas - maxUnavailable available.
    for (const e of seen) {
      if (e.resource.plural !== 'deployments' || e.object.metadata.name !== 'roll') continue;
      const s = dstatus(e.object);
      if (s.availableReplicas !== undefined) expect(s.availableReplicas).toBeGreaterThanOrEqual(3);
    }
    const rsReplicas = new Map<string, number>();
    for (const e of seen) {
      if (e.resource.plural !== 'replicasets') continue;
      rsReplicas.set(e.object.metadata.name, (e.object['spec'] as { replicas: number }).replicas);
      expect([...rsReplicas.values()].reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(5);
    }
    const reasons = h.events('roll').map((e) => String(e['message']));
    expect(reasons).toContain(`Scaled up replica set ${newRS.metadata.name} from 0 to 1`);
    expect(
      reasons.some((m) => m.startsWith(`Scaled down replica set ${oldRS.metadata.name} from 4 to`)),
    ).toBe(true);
  });

  it('scales down, deleting pods, and reports the smaller status', async () => {
    h.create('apps', 'deployments', deploymentBody('shrink', 3));
    const d = await eventually(() => rolledOut('shrink', 3), 'rollout');
    const next = structuredClone(d);
    (next['spec'] as { replicas: number }).replicas = 1;
    h.store.replace(h.type('apps', 'deployments'), next);
    await eventually(() => rolledOut('shrink', 1) && h.pods().length === 1, 'scaled down to 1');
    const rs = replicaSets(d)[0]!;
    expect(h.events('shrink').map((e) => e['message'])).toContain(
      `Scaled down replica set ${rs.metadata.name} from 3 to 1`,
    );
    expect(h.events(rs.metadata.name).filter((e) => e['reason'] === 'SuccessfulDelete')).toHaveLength(2);
  });

  it('keeps revisionHistoryLimit old ReplicaSets', async () => {
    h.create('apps', 'deployments', deploymentBody('hist', 1, [container()], { revisionHistoryLimit: 1 }));
    let d = await eventually(() => rolledOut('hist', 1), 'rollout 1');
    for (const tag of ['1.26', '1.27']) {
      const next = structuredClone(d);
      (
        next['spec'] as { template: { spec: { containers: { image: string }[] } } }
      ).template.spec.containers[0]!.image = `nginx:${tag}`;
      h.store.replace(h.type('apps', 'deployments'), next);
      d = await eventually(() => {
        const cur = rolledOut('hist', 1);
        return cur && (cur.metadata.generation ?? 0) > (d.metadata.generation ?? 0) && h.pods().length === 1
          ? cur
          : false;
      }, `rollout to ${tag}`);
    }
    await eventually(() => replicaSets(d).length === 2, 'history trimmed to one old ReplicaSet');
    expect(d.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('3');
  });

  it('reports MinimumReplicasUnavailable while pods cannot become ready', async () => {
    h.create(
      'apps',
      'deployments',
      deploymentBody('sick', 2, [container({ env: [{ name: 'KUBESIM_BEHAVIOUR', value: 'never-ready' }] })]),
    );
    const d = await eventually(() => {
      const cur = h.get('apps', 'deployments', 'sick');
      const s = dstatus(cur);
      return s.replicas === 2 && h.pods().filter((p) => status(p).phase === 'Running').length === 2
        ? cur
        : false;
    }, 'pods running');
    const s = dstatus(d);
    expect(s.unavailableReplicas).toBe(2);
    expect(s.availableReplicas).toBeUndefined();
    expect(s.conditions?.find((c) => c.type === 'Available')).toMatchObject({
      status: 'False',
      reason: 'MinimumReplicasUnavailable',
    });
  });

  it('is removed with its ReplicaSets and pods by the garbage collector', async () => {
    h.create('apps', 'deployments', deploymentBody('gone', 2));
    await eventually(() => rolledOut('gone', 2), 'rollout');
    h.store.delete(h.type('apps', 'deployments'), h.namespace, 'gone');
    await eventually(
      () => h.pods().length === 0 && h.store.all(h.type('apps', 'replicasets'), h.namespace).length === 0,
      'everything gone',
    );
  });

  it('resolves maxSurge and maxUnavailable as upstream', () => {
    expect(fenceposts({ replicas: 3 })).toEqual({ surge: 1, unavailable: 0 });
    expect(fenceposts({ replicas: 4 })).toEqual({ surge: 1, unavailable: 1 });
    expect(
      fenceposts({ replicas: 10, strategy: { rollingUpdate: { maxSurge: 0, maxUnavailable: '0%' } } }),
    ).toEqual({
      surge: 0,
      unavailable: 1,
    });
    expect(fenceposts({ replicas: 3, strategy: { type: 'Recreate' } })).toEqual({ surge: 0, unavailable: 3 });
  });
});
