/**
 * Task and staging bodies the contract accepts, in CC's shapes: completion callbacks, Diego's environment
 * list, admin and custom buildpacks, and CC's nils (a first staging's cache fields, an old buildpack's
 * sha256).
 */
import fc from 'fast-check';
import { envArray } from './environment.js';
import { buildpackLifecycle, credentials, dockerLifecycle, image } from './lifecycles.js';
import { dnsLabel, nameUpTo } from './names.js';

const callback = fc.oneof(
  fc.constantFrom(
    'https://cc.example/internal/v3/tasks/x/completed',
    'http://127.0.0.1:9023/x',
    'http://[::1]/x?y=z#f',
    'https://cc.example/../../etc/passwd',
  ),
  fc.webUrl(),
);

export const taskBody = fc.record(
  {
    name: nameUpTo(255),
    app_guid: nameUpTo(63),
    app_name: nameUpTo(255),
    org_guid: nameUpTo(63),
    org_name: nameUpTo(255),
    space_guid: nameUpTo(63),
    space_name: nameUpTo(255),
    namespace: fc.oneof(fc.constant(''), dnsLabel),
    completion_callback: callback,
    environment: envArray,
    lifecycle: fc.oneof(dockerLifecycle, buildpackLifecycle),
    memory_mb: fc.integer({ min: 1, max: 1024 * 1024 }),
    disk_mb: fc.integer({ min: 1, max: 1024 * 1024 * 1024 }),
    cpu_weight: fc.integer({ min: 1, max: 100 }),
  },
  { requiredKeys: ['completion_callback', 'lifecycle'] },
);

/** Admin buildpacks carry a sha256 (nil for one uploaded before CC kept checksums); custom ones do not. */
const buildpacks = fc.array(
  fc.record(
    {
      name: nameUpTo(255),
      key: nameUpTo(255),
      url: fc.oneof(fc.webUrl(), nameUpTo(200)),
      sha256: fc.oneof(fc.stringMatching(/^[a-f0-9]{64}$/), fc.constant(null)),
      skip_detect: fc.boolean(),
    },
    { requiredKeys: ['name', 'key', 'url', 'skip_detect'] },
  ),
  { maxLength: 4 },
);

/** The buildpack cache: CC's nil download URI and checksum on an app's first staging, else both set. */
const buildpackCache = fc.oneof(
  fc.constant({ buildpack_cache_download_uri: null, buildpack_cache_checksum: null }),
  fc.record({
    buildpack_cache_download_uri: fc.webUrl(),
    buildpack_cache_checksum: fc.stringMatching(/^[a-f0-9]{0,64}$/),
  }),
  fc.record(
    {
      buildpack_cache_download_uri: fc.webUrl(),
      buildpack_cache_checksum: fc.stringMatching(/^[a-f0-9]{0,64}$/),
    },
    { requiredKeys: [] },
  ),
);

export const stagingBody = fc.record(
  {
    app_guid: nameUpTo(63),
    app_name: nameUpTo(255),
    org_guid: nameUpTo(63),
    org_name: nameUpTo(255),
    space_guid: nameUpTo(63),
    space_name: nameUpTo(255),
    completion_callback: callback,
    environment: envArray,
    lifecycle: fc.oneof(
      fc.tuple(image, credentials).map(([img, creds]) => ({ docker_lifecycle: { image: img, ...creds } })),
      fc
        .tuple(
          fc.record(
            {
              app_bits_download_uri: fc.webUrl(),
              droplet_upload_uri: fc.webUrl(),
              buildpacks,
              buildpack_cache_upload_uri: fc.webUrl(),
              buildpack_cache_checksum_algorithm: fc.constantFrom('sha256', 'md5', ''),
            },
            { requiredKeys: ['app_bits_download_uri', 'droplet_upload_uri'] },
          ),
          buildpackCache,
        )
        .map(([b, cache]) => ({ buildpack_lifecycle: { ...b, ...cache } })),
    ),
    memory_mb: fc.integer({ min: 1, max: 1024 * 1024 }),
    disk_mb: fc.integer({ min: 1, max: 1024 * 1024 * 1024 }),
    cpu_weight: fc.integer({ min: 1, max: 100 }),
  },
  { requiredKeys: ['completion_callback', 'lifecycle'] },
);
