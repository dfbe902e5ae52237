import { describe, expect, it } from '@jest/globals';
import { lrpToDeployment } from './deployment.js';
import { lrpToStatefulSet } from './statefulset.js';
import { sampleLrp } from './lrp.fixture.js';
import {
  type RegistryMessage,
  type RouteSource,
  registrationChanges,
  registrationsOf,
  routeSourceOf,
  routeSourceOfLrp,
} from './route-registrations.js';

const lrp = sampleLrp();
const deployment = lrpToDeployment(lrp, { runAsNonRoot: true });
const source = routeSourceOf(deployment) as RouteSource;
const parsed = (xs: Iterable<string>): RegistryMessage[] =>
  [...xs].map((x) => JSON.parse(x) as RegistryMessage);
const pod = (n: number) => ({ ip: `127.9.0.${n + 1}`, uid: `uid-${n}`, index: n });

/** gorouter's RegistryMessage decoding (mbus/subscriber.go): a wrong type drops the whole message. */
function gorouterDecodes(m: RegistryMessage): boolean {
  const str = (v: unknown) => typeof v === 'string';
  const uint16 = (v: unknown) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 65535;
  return (
    str(m.host) &&
    m.host !== '' &&
    uint16(m.port) &&
    m.port > 0 &&
    Array.isArray(m.uris) &&
    m.uris.length > 0 &&
    m.uris.every(str) &&
    str(m.app) &&
    str(m.private_instance_id) &&
    str(m.private_instance_index) &&
    Object.values(m.tags).every(str)
  );
}

describe('routeSourceOf', () => {
  it("reads a translated workload's routes, grouped by port, a route without a port on the app's first", () => {
    expect(source.ports).toEqual([[8080, ['my-app.example.com', 'my-app.example.com/api', '*.example.com']]]);
    expect(source.app).toBe(lrp.appGuid);
    expect(source.desired).toBe(3);
  });

  it("carries CC's metric tags as Diego's route-emitter sends them", () => {
    expect(source.tags).toEqual({
      component: 'route-emitter',
      source_id: lrp.appGuid,
      app_id: lrp.appGuid,
      app_name: 'My App',
      process_id: lrp.guid,
      process_type: 'web',
      organization_id: lrp.orgGuid,
      organization_name: 'acme',
      space_id: lrp.spaceGuid,
      space_name: 'dev',
    });
  });

  it.each([
    ['no routes', sampleLrp({ routes: [] })],
    ['routes never sent', sampleLrp({ routes: undefined })],
  ])('is undefined for a workload with %s', (_, l) => {
    expect(routeSourceOf(lrpToDeployment(l, { runAsNonRoot: true }))).toBeUndefined();
  });

  it('groups by port and names a hostname once', () => {
    const d = lrpToDeployment(
      sampleLrp({
        routes: [
          { hostname: 'a.example.com', port: 8080 },
          { hostname: 'a.example.com', port: 8080 },
          { hostname: 'c.example.com', port: 9090 },
        ],
      }),
      { runAsNonRoot: true },
    );
    expect(routeSourceOf(d)?.ports).toEqual([
      [8080, ['a.example.com']],
      [9090, ['c.example.com']],
    ]);
  });
});

describe('routeSourceOfLrp', () => {
  it.each([
    [
      'routes on two ports',
      sampleLrp({ routes: [{ hostname: 'a.example.com' }, { hostname: 'b.example.com', port: 9090 }] }),
    ],
    ['no declared port', sampleLrp({ ports: [], routes: [{ hostname: 'a.example.com' }] })],
    ['no routes', sampleLrp({ routes: [] })],
    ['routes never sent', sampleLrp({ routes: undefined })],
  ])('gives what the workload it becomes gives, for %s', (_, l) => {
    expect(routeSourceOfLrp(l)).toEqual(routeSourceOf(lrpToDeployment(l, { runAsNonRoot: true })));
    expect(routeSourceOfLrp(l)).toEqual(
      routeSourceOf(lrpToStatefulSet(l, { runAsNonRoot: true, instanceIndexEnv: true })),
    );
  });
});

describe('registrationsOf', () => {
  it('is one message per instance and route port, each decoding with gorouter types', () => {
    const two = {
      ...source,
      ports: [...source.ports, [9090, ['metrics.example.com']]] as RouteSource['ports'],
    };
    const regs = registrationsOf(two, [pod(0), pod(1)]);
    expect([...regs.keys()]).toEqual([
      '127.9.0.1:8080',
      '127.9.0.1:9090',
      '127.9.0.2:8080',
      '127.9.0.2:9090',
    ]);
    for (const m of parsed(regs.values())) expect(gorouterDecodes(m)).toBe(true);
    expect(JSON.parse(regs.get('127.9.0.2:8080') ?? '')).toEqual({
      host: '127.9.0.2',
      port: 8080,
      uris: ['my-app.example.com', 'my-app.example.com/api', '*.example.com'],
      app: lrp.appGuid,
      private_instance_id: 'uid-1',
      private_instance_index: '1',
      tags: { ...source.tags, process_instance_id: 'uid-1', instance_id: '1' },
    });
  });

  it('skips an instance without an address', () => {
    expect(registrationsOf(source, [{ ip: '', uid: 'u', index: 0 }]).size).toBe(0);
  });
});

describe('registrationChanges', () => {
  const before = registrationsOf(source, [pod(0), pod(1)]);

  it('is nothing between equal sets', () => {
    expect(registrationChanges(before, registrationsOf(source, [pod(0), pod(1)]))).toEqual({
      unregister: [],
      register: [],
    });
  });

  it('registers a new instance and unregisters a gone one whole', () => {
    const after = registrationsOf(source, [pod(1), pod(2)]);
    const c = registrationChanges(before, after);
    expect(parsed(c.unregister).map((m) => [m.host, m.uris])).toEqual([['127.9.0.1', source.ports[0]?.[1]]]);
    expect(parsed(c.register).map((m) => m.host)).toEqual(['127.9.0.3']);
  });

  it('unregisters only the hostnames a route update removed, and registers the rest again', () => {
    const fewer: RouteSource = { ...source, ports: [[8080, ['my-app.example.com', 'new.example.com']]] };
    const c = registrationChanges(before, registrationsOf(fewer, [pod(0), pod(1)]));
    expect(parsed(c.unregister).map((m) => m.uris)).toEqual([
      ['my-app.example.com/api', '*.example.com'],
      ['my-app.example.com/api', '*.example.com'],
    ]);
    expect(parsed(c.register).map((m) => m.uris)).toEqual([
      ['my-app.example.com', 'new.example.com'],
      ['my-app.example.com', 'new.example.com'],
    ]);
  });

  it('registers again an instance whose shown index moved (gorouter updates the endpoint)', () => {
    const c = registrationChanges(before, registrationsOf(source, [pod(0), { ...pod(1), index: 0 }]));
    expect(c.unregister).toEqual([]);
    expect(parsed(c.register).map((m) => m.private_instance_index)).toEqual(['0']);
  });

  it('unregisters everything when the LRP has no routes any more', () => {
    const c = registrationChanges(before, new Map());
    expect(c.unregister).toHaveLength(2);
    expect(c.register).toEqual([]);
  });
});
