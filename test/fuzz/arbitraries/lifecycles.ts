/**
 * Lifecycles: docker (image, command, registry credentials given, left out or CC's nil for a public image)
 * and buildpack (droplet hash, droplet guid, start command).
 */
import fc from 'fast-check';
import { anyName, labelValue, nameUpTo } from './names.js';

export const image = fc.oneof(
  fc.constantFrom(
    'nginx',
    'nginx:1.25',
    'registry.example.com:5000/team/app@sha256:' + 'a'.repeat(64),
    'docker.io/library/busybox:latest',
    'localhost/x',
  ),
  nameUpTo(200).filter((s) => s.trim().length > 0),
);

const command = fc.oneof(
  fc.constant([] as string[]),
  anyName.map((c) => ['/bin/sh', '-c', c]),
  fc.array(anyName, { maxLength: 5 }),
);

/** Registry credentials: given, left out (CC's kpack lifecycle), or CC's nil for a public image. */
export const credentials: fc.Arbitrary<{
  registry_username?: string | null;
  registry_password?: string | null;
}> = fc.oneof(
  {
    arbitrary: fc.record(
      { registry_username: nameUpTo(100), registry_password: nameUpTo(200) },
      { requiredKeys: [] },
    ),
    weight: 2,
  },
  { arbitrary: fc.constant({ registry_username: null, registry_password: null }), weight: 2 },
);

export const dockerLifecycle = fc
  .tuple(image, command, credentials)
  .map(([img, cmd, creds]) => ({ docker_lifecycle: { image: img, command: cmd, ...creds } }));

export const buildpackLifecycle = fc
  .record({
    droplet_hash: fc.stringMatching(/^[a-f0-9]{1,64}$/),
    droplet_guid: labelValue,
    start_command: anyName,
  })
  .map((b) => ({ buildpack_lifecycle: b }));
