/**
 * LRP bodies the contract accepts, with hostile names wherever it allows any string: desires and updates
 * in CC's shapes (docs/cloud-controller.md, "What CC sends, and what it reads back"): `routes` as
 * {"cf-router": [{hostname, port}]}, `egress_rules` as Diego's SecurityGroupRule in protobuf JSON,
 * `placement_tags` as isolation segment names, CC's nil for a non-http check's endpoint.
 */
import fc from 'fast-check';
import { envName, envValue } from './environment.js';
import { buildpackLifecycle, dockerLifecycle, image } from './lifecycles.js';
import { dnsLabel, labelValue, nameUpTo } from './names.js';

/** A qualified name (annotation key): prefix/name, the prefix sometimes over 253 characters. */
const qualifiedName = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?$/),
  fc
    .tuple(fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?$/), fc.stringMatching(/^[a-z0-9]{1,10}$/))
    .map(([p, n]) => `${p}.io/${n}`),
  fc.constantFrom(
    'prometheus.io/scrape',
    'prometheus.io/port',
    'cloudfoundry.org/process_guid',
    `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}/x`,
    `${'a.'.repeat(150)}io/x`,
    'x'.repeat(63),
  ),
);

const healthCheck = fc.oneof(
  // CC sends the process's endpoint whatever the type: nil (null) for every port, process or none check.
  fc
    .tuple(fc.constantFrom('port', 'process', 'none'), fc.boolean())
    .map(([type, nil]) =>
      nil ? { health_check_type: type, health_check_http_endpoint: null } : { health_check_type: type },
    ),
  fc.record({
    health_check_type: fc.constant('http'),
    health_check_http_endpoint: fc.oneof(
      fc.constantFrom('/', '/health', '/a b', 'no-slash', '/%00', '/../../etc'),
      nameUpTo(100).filter((s) => s.length > 0),
    ),
  }),
);

/** A millisecond count: ordinary, or anywhere up to the largest safe integer. */
const millis = fc.oneof(
  fc.integer({ min: 0, max: 600_000 }),
  fc.constantFrom(0, 1, 999, 2 ** 31, 2 ** 32, 2 ** 53 - 1),
  fc.maxSafeNat(),
);

const appPort = fc.integer({ min: 1, max: 65535 });

/** Hundreds or thousands of items: a few repeated, which is cheap to make. */
function many<T>(item: fc.Arbitrary<T>, n: { min: number; max: number }) {
  return fc
    .tuple(fc.array(item, { minLength: 1, maxLength: 4 }), fc.integer(n))
    .map(([items, count]) => Array.from({ length: count }, (_, i) => items[i % items.length]!));
}

const route = fc.record(
  {
    hostname: fc.oneof(
      { arbitrary: fc.domain(), weight: 4 },
      { arbitrary: fc.tuple(fc.domain(), fc.webPath()).map(([d, p]) => `${d}${p}`), weight: 2 },
      { arbitrary: fc.domain().map((d) => `*.${d}`), weight: 1 },
      { arbitrary: nameUpTo(200), weight: 1 },
    ),
    port: appPort,
  },
  { requiredKeys: ['hostname'] },
);

/**
 * CC's HTTP routes of a process: `{"cf-router": [{hostname, port}]}`, the hostname maybe with a /path or
 * a wildcard; up to the contract's 1,000.
 */
export const routes = fc.record({ 'cf-router': fc.array(route, { maxLength: 4 }) });

const ipv4Range = fc.tuple(fc.ipV4(), fc.ipV4()).map(([a, b]) => `${a}-${b}`);
const cidr = fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })).map(([ip, n]) => `${ip}/${n}`);

/** An ASG rule's destinations: addresses, CIDRs, `a.b.c.d-e.f.g.h` ranges (and, rarely, any string). */
const destinations = fc.array(
  fc.oneof(
    { arbitrary: fc.ipV4(), weight: 3 },
    { arbitrary: cidr, weight: 3 },
    { arbitrary: ipv4Range, weight: 2 },
    { arbitrary: fc.constantFrom('0.0.0.0/0', '10.0.0.0-10.255.255.255'), weight: 1 },
    { arbitrary: nameUpTo(256), weight: 1 },
  ),
  { minLength: 1, maxLength: 3 },
);

/** The rest of a rule in protobuf JSON: `log` only when true, `annotations` the groups' guids. */
const ruleExtras = {
  log: fc.constant(true),
  annotations: fc.array(
    fc.uuid().map((g) => `security_group_id:${g}`),
    { minLength: 1, maxLength: 3 },
  ),
};

/**
 * An application security group rule as CC sends it: Diego's SecurityGroupRule in protobuf JSON
 * (camelCase, default values left out, so an ICMP type and code of 0 are absent).
 */
export const egressRule = fc.oneof(
  fc.record(
    {
      protocol: fc.constantFrom('tcp', 'udp'),
      destinations,
      ports: fc.array(appPort, { minLength: 1, maxLength: 4 }),
      ...ruleExtras,
    },
    { requiredKeys: ['protocol', 'destinations', 'ports'] },
  ),
  fc.record(
    {
      protocol: fc.constantFrom('tcp', 'udp'),
      destinations,
      portRange: fc.tuple(appPort, appPort).map(([a, b]) => ({ start: Math.min(a, b), end: Math.max(a, b) })),
      ...ruleExtras,
    },
    { requiredKeys: ['protocol', 'destinations', 'portRange'] },
  ),
  fc.record(
    {
      protocol: fc.constant('icmp'),
      destinations,
      icmpInfo: fc.record(
        { type: fc.integer({ min: -1, max: 255 }), code: fc.integer({ min: -1, max: 255 }) },
        { requiredKeys: [] },
      ),
      ...ruleExtras,
    },
    { requiredKeys: ['protocol', 'destinations', 'icmpInfo'] },
  ),
  fc.record(
    { protocol: fc.constant('all'), destinations, ...ruleExtras },
    { requiredKeys: ['protocol', 'destinations'] },
  ),
);

/** Isolation segment names: CC sends `[]` or the space's one segment. */
const placementTags = fc.array(
  fc.oneof(fc.constantFrom('iso-seg-1', 'shared', 'persistent_isolation_segment'), nameUpTo(255)),
  { maxLength: 2 },
);

/** A desire body the contract accepts, with hostile names wherever the contract allows any string. */
export const desireBody = fc
  .record({
    guid: labelValue,
    version: labelValue,
    process_type: nameUpTo(63),
    app_guid: nameUpTo(63),
    app_name: nameUpTo(255),
    space_guid: nameUpTo(63),
    space_name: nameUpTo(255),
    organization_guid: nameUpTo(63),
    organization_name: nameUpTo(255),
    namespace: fc.option(fc.oneof(fc.constant(''), dnsLabel), { nil: undefined }),
    ports: fc.array(fc.integer({ min: 1, max: 65535 }), { minLength: 1, maxLength: 4 }),
    environment: fc.dictionary(envName, envValue, { maxKeys: 8 }),
    instances: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 10_000 })),
    last_updated: nameUpTo(64),
    health: healthCheck,
    health_check_timeout_ms: millis,
    start_timeout_ms: millis,
    memory_mb: fc.integer({ min: 1, max: 1024 * 1024 }),
    disk_mb: fc.integer({ min: 1, max: 1024 * 1024 * 1024 }),
    cpu_weight: fc.integer({ min: 1, max: 100 }),
    // One mount per directory (the schema refuses two at one path, as Kubernetes would).
    volume_mounts: fc.uniqueArray(
      fc.record({
        volume_id: fc.oneof(
          fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?(\.[a-z0-9]{1,5})?$/),
          fc.constant(`${'a'.repeat(63)}.${'b'.repeat(63)}`),
        ),
        mount_dir: fc.oneof(
          fc.constantFrom('/data', '/', '/../etc', '/var/vcap/data'),
          nameUpTo(100).map((s) => `/${s.replace(/\0/g, '')}`),
        ),
      }),
      { maxLength: 3, selector: (m) => m.mount_dir },
    ),
    lifecycle: fc.oneof(
      { arbitrary: dockerLifecycle, weight: 3 },
      { arbitrary: buildpackLifecycle, weight: 1 },
    ),
    user_defined_annotations: fc.dictionary(
      qualifiedName,
      fc.oneof(
        { arbitrary: fc.string({ maxLength: 40 }), weight: 8 },
        { arbitrary: fc.integer({ min: 1, max: 300 }).map((k) => 'a'.repeat(k * 1024)), weight: 1 },
      ),
      { maxKeys: 4 },
    ),
    placement_tags: placementTags,
    routes,
    egress_rules: fc.array(egressRule, { maxLength: 3 }),
  })
  .map(({ health, namespace, ...b }) => ({
    ...b,
    ...health,
    ...(namespace === undefined ? {} : { namespace }),
    process_guid: `${b.guid}-${b.version}`,
  }));

/**
 * A desire body with up to the contract's 1,000 routes and thousands of egress rules (large application
 * security groups): more than the workload's annotations hold, for the translation's properties (the
 * routes' fuzzing walks every field of a body, too slow at this size).
 */
export const crowdedDesireBody = fc
  .tuple(desireBody, many(route, { min: 100, max: 1000 }), many(egressRule, { min: 200, max: 4000 }))
  .map(([b, r, e]) => ({ ...b, routes: { 'cf-router': r }, egress_rules: e }));

export const updateBody = fc.record({
  guid: labelValue,
  version: labelValue,
  update: fc.record(
    {
      instances: fc.integer({ min: 0, max: 10_000 }),
      annotation: nameUpTo(64),
      image: fc.oneof(image, fc.constantFrom('', '   ')),
      routes,
    },
    { requiredKeys: ['instances', 'annotation'] },
  ),
});
