/**
 * Environment variables: CC's names (and hostile ones), values up to 120 KiB, and Diego's list form that
 * tasks and stagings carry.
 */
import fc from 'fast-check';

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]{0,40}$/;

export const envName = fc.oneof(
  fc.stringMatching(ENV_NAME),
  fc.constantFrom(
    'PORT',
    'CF_INSTANCE_PORT',
    'POD_NAME',
    'VCAP_SERVICES',
    '__proto__',
    'constructor',
    '.',
    '-',
  ),
);

/** Environment values, sometimes large (CC puts VCAP_SERVICES and VCAP_APPLICATION here). */
export const envValue = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 60 }), weight: 6 },
  { arbitrary: fc.json({ maxDepth: 3 }), weight: 2 },
  { arbitrary: fc.integer({ min: 1, max: 120 }).map((k) => 'v'.repeat(k * 1024)), weight: 1 },
);

/** Diego's EnvironmentVariable in protobuf JSON: a value that is "" is left out. */
export const envArray = fc.array(fc.record({ name: envName, value: envValue }, { requiredKeys: ['name'] }), {
  maxLength: 6,
});
