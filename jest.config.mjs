// Jest runs in native ESM mode (client-node 1.x is ESM-only); swc strips types, `tsc -b` type-checks.
import { availableParallelism } from 'node:os';

const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } },
  ],
};
const common = {
  transform,
  extensionsToTreatAsEsm: ['.ts'],
  testEnvironment: 'node',
  moduleNameMapper: {
    '^@opi/([a-z-]+)$': '<rootDir>/libs/$1/src/index.ts',
    '^@opi/([a-z-]+)/([a-z-]+)$': '<rootDir>/libs/$1/src/$2.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
};
export default {
  testTimeout: 30000,
  // Most suites wait on timers (the simulated kubelet, backoffs, the watch), not on a core: one worker
  // more than the cores, at most 4 (jest's default of cores − 1 runs one suite at a time on 2 cores).
  maxWorkers: Math.min(4, availableParallelism() + 1),
  globalSetup: '<rootDir>/test/global-setup.mjs',
  globalTeardown: '<rootDir>/test/global-teardown.mjs',
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/libs/*/src/**/*.test.ts', '<rootDir>/apps/*/src/**/*.test.ts'],
    },
    { ...common, displayName: 'contract', testMatch: ['<rootDir>/test/contract/**/*.test.ts'] },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    // The app suites again with OPI_WORKLOAD_KIND=statefulset (statefulset-mode.ts sets OPI_TEST_WORKLOAD_KIND,
    // test/support/service.ts reads it).
    {
      ...common,
      displayName: 'integration-statefulset',
      setupFiles: ['<rootDir>/test/support/statefulset-mode.ts'],
      testMatch: [
        'scenarios/convergence',
        'scenarios/cc-replay',
        'scenarios/scaling',
        'scenarios/desire-refused',
        'scenarios/pods-refused',
        'cluster-cache/*',
      ].map((f) => `<rootDir>/test/integration/${f}.test.ts`),
    },
    // The service against CF's real gorouter and NATS (test/support/realrouter.ts starts a pair per file).
    { ...common, displayName: 'routing', testMatch: ['<rootDir>/test/routing/**/*.test.ts'] },
    // A real browser (Debian's chromium, driven by playwright-core) against the service in-process.
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
    // fast-check properties over every route and the translation (seed: FUZZ_SEED, scale: FUZZ_RUNS).
    { ...common, displayName: 'fuzz', testMatch: ['<rootDir>/test/fuzz/**/*.test.ts'] },
    // `npm run test:chaos`: worker/Redis/cluster/CC faults under a CC-like loop; each seed sets its own timeout.
    { ...common, displayName: 'chaos', testMatch: ['<rootDir>/test/chaos/**/*.test.ts'] },
  ],
};
