/**
 * Environment variables: CC's names (and hostile ones), values up to 120 KiB, and Diego's list form that
 * tasks and stagings carry.
 */
import fc from 'fast-check';

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]{0,40}$/;
/** Names CC accepts that clusters allow only from 1.32 (printable ASCII but `=`): the cluster judges them. */
const RELAXED_ENV_NAME = /^[!-<>-~][ -<>-~]{0,30}$/;

/** Names of an LRP's environment: any CC accepts, the relaxed ones too (decision 7). */
export const envName = fc.oneof(
  { arbitrary: fc.stringMatching(ENV_NAME), weight: 4 },
  { arbitrary: fc.stringMatching(RELAXED_ENV_NAME), weight: 1 },
  fc.constantFrom(
    'MY VAR',
    '1ST',
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

/** Names of a task's or staging's environment, which keep Kubernetes' old rule (decision 7). */
const strictEnvName = fc.oneof(
  fc.stringMatching(ENV_NAME),
  fc.constantFrom('PORT', 'VCAP_SERVICES', '__proto__', 'constructor', '.', '-'),
);

/** Environment values, sometimes large (CC puts VCAP_SERVICES and VCAP_APPLICATION here). */
export const envValue = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 60 }), weight: 6 },
  { arbitrary: fc.json({ maxDepth: 3 }), weight: 2 },
  { arbitrary: fc.integer({ min: 1, max: 120 }).map((k) => 'v'.repeat(k * 1024)), weight: 1 },
);

/** Diego's EnvironmentVariable in protobuf JSON: a value that is "" is left out. */
export const envArray = fc.array(
  fc.record({ name: strictEnvName, value: envValue }, { requiredKeys: ['name'] }),
  {
    maxLength: 6,
  },
);
