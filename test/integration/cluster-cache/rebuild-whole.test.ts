/**
 * After Redis lost everything, the records rebuilt from the cluster equal the ones CC's requests made,
 * field for field: routes (an update's too), egress rules and placement tags included; an update that
 * changed only the routes rolled no pod.
 */
import type { LrpRecord } from '@opi/domain';
import { keys } from '@opi/state';
import { ANNOTATION_GENERATION, ANNOTATION_ROUTES } from '@opi/translation';
import {
  WORKLOAD_KIND,
  type Service,
  call,
  eventually,
  lrpWorkloads,
  startService,
} from '../../support/service.js';
import { flushServiceDb } from './flush.js';
import { type Lrp, desire, livePods, lrp, settledEntry } from './lrps.js';
import { HOUR_MS } from './queues.js';

// A database of its own per workload mode (both projects may run at once), flushed only when it holds
// nothing but this service's keys.
const DB = WORKLOAD_KIND === 'deployment' ? 11 : 12;

/** Diego's SecurityGroupRules in protobuf JSON, as CC sends them: ports, a range, ICMP, all. */
const egressRules = (n: number) => [
  {
    protocol: 'tcp',
    destinations: ['10.0.0.0-10.255.255.255'],
    ports: [443, 8443 + n],
    annotations: [`security_group_id:a1b2c3d4-0000-4000-8000-00000000000${n}`],
  },
  { protocol: 'udp', destinations: ['10.1.0.0/16'], portRange: { start: 5000, end: 5100 + n }, log: true },
  { protocol: 'icmp', destinations: ['0.0.0.0/0'], icmpInfo: { type: 8, code: -1 } },
  // CC leaves ICMP type and code 0 out (protobuf JSON omits default values).
  { protocol: 'icmp', destinations: ['192.168.0.1'], icmpInfo: {} },
  { protocol: 'all', destinations: ['172.16.0.0/12'] },
];

const cfRouter = (...hostnames: string[]) => ({
  'cf-router': hostnames.map((hostname) => ({ hostname, port: 8080 })),
});

async function record(s: Service, a: Lrp): Promise<Extract<LrpRecord, { state: 'desired' }>> {
  const text = await s.redis.get(keys(s.settings.queuePrefix).lrp(a.pg));
  const rec = text === null ? undefined : (JSON.parse(text) as LrpRecord);
  if (rec?.state !== 'desired') throw new Error(`${a.pg} has no desired record`);
  return rec;
}

/** The LRP's workload once the converge stamped it with the record's generation. */
async function convergedWorkload(s: Service, a: Lrp) {
  const { generation } = await record(s, a);
  return eventually(async () => {
    const [w] = await lrpWorkloads(s, a);
    return w?.metadata?.annotations?.[ANNOTATION_GENERATION] === String(generation) ? w : undefined;
  }, `${a.pg}'s workload at generation ${generation}`);
}

describe('the records rebuilt after a Redis flush', () => {
  let s: Service;
  beforeAll(async () => {
    s = await startService({ workers: 1, redisDb: DB, env: { OPI_RESYNC_INTERVAL_MS: HOUR_MS } });
  });
  afterAll(async () => {
    await s.close();
  });

  it('equal the originals, routes, egress rules and placement tags included', async () => {
    const apps = [lrp(1, 'whole'), lrp(2, 'whole'), lrp(3, 'whole'), lrp(4, 'whole')];
    const bodies: Record<string, unknown>[] = [
      {
        instances: 2,
        routes: cfRouter('app.example.com', 'www.app.example.com', 'app.example.com/api', '*.example.com'),
        egress_rules: egressRules(1),
        placement_tags: ['iso-seg-1'],
      },
      {
        routes: {
          'cf-router': [{ hostname: 'second.example.com', port: 8080 }, { hostname: 'no-port.example.com' }],
        },
        egress_rules: egressRules(2),
        placement_tags: [],
        // Credentials come back from the pull Secret, never from an annotation.
        lifecycle: {
          docker_lifecycle: {
            image: 'registry.example/private:1',
            command: [],
            registry_username: 'robot',
            registry_password: 'pa55:word',
          },
        },
      },
      // What CC sends for a process with no route and no security group.
      { routes: { 'cf-router': [] }, egress_rules: [], placement_tags: [] },
      {
        routes: cfRouter('fourth.example.com'),
        egress_rules: egressRules(4).slice(0, 2),
        placement_tags: ['shared'],
      },
    ];
    for (const [i, a] of apps.entries()) await desire(s, a, { last_updated: `t${i}`, ...bodies[i] });
    for (const a of apps) await convergedWorkload(s, a);
    const first = apps[0]!;
    const podsBefore = await settledEntry(s, first, 2);
    const uids = async () =>
      (await livePods(s, first)).map((p) => `${p.metadata?.name}/${p.metadata?.uid}`).sort();
    const uidsBefore = await uids();

    // CC's update after `cf map-route`/`unmap-route`: instances, every route and a new last_updated.
    const routes = cfRouter('app.example.com', 'app.example.com/api/v2', '*.apps.example.com');
    const update = {
      guid: first.guid,
      version: first.version,
      update: { instances: 2, annotation: 't0b', routes },
    };
    expect((await call(s.base, 'POST', `/apps/${first.pg}`, update)).status).toBe(200);
    const updated = await convergedWorkload(s, first);
    expect(JSON.parse(updated.metadata?.annotations?.[ANNOTATION_ROUTES] ?? '')).toEqual(routes['cf-router']);
    // The routes are on the workload's metadata only: the same pods, none rolled.
    expect((await settledEntry(s, first, 2)).instances.map((i) => i.podName).sort()).toEqual(
      podsBefore.instances.map((i) => i.podName).sort(),
    );
    expect(await uids()).toEqual(uidsBefore);

    const originals = new Map<string, unknown>();
    for (const a of apps) originals.set(a.pg, (await record(s, a)).lrp);
    expect((originals.get(first.pg) as { routes: unknown }).routes).toEqual(routes['cf-router']);

    await flushServiceDb(s, DB);
    await expect(s.redis.get(keys(s.settings.queuePrefix).lrp(first.pg))).resolves.toBeNull();

    // The cache writer notices the flush on its own and its sync rebuilds the records (no CC request).
    await eventually(async () => {
      const texts = await Promise.all(apps.map((a) => s.redis.get(keys(s.settings.queuePrefix).lrp(a.pg))));
      return texts.every((t) => t !== null);
    }, 'every record rebuilt from the cluster');
    for (const a of apps) expect((await record(s, a)).lrp).toEqual(originals.get(a.pg));
  }, 120_000);
});
