/**
 * How every fuzz property runs: the seed and the number of runs come from the environment, and each
 * property prints one line `fuzz <name>: seed=<n> cases=<n> failures=<n>`, so a failure in CI can be
 * replayed with `FUZZ_SEED=<n> npm run test:fuzz` (fast-check's report adds the counterexample and the
 * path that replays it at once).
 *
 * The seed is new on every run unless FUZZ_SEED is set: a fixed seed would try the same inputs in every
 * CI run and never find anything new, while a printed random one explores more each run and still
 * replays exactly. FUZZ_RUNS multiplies every property's number of runs (e.g. 10 for a long local run,
 * 0.1 for a smoke run).
 */
import fc from 'fast-check';

function envNumber(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got ${JSON.stringify(raw)}`);
  return n;
}

/** One seed per test file (so per jest worker), printed with every property. */
export const SEED = (envNumber('FUZZ_SEED') ?? Date.now() ^ Math.floor(Math.random() * 2 ** 31)) | 0;
const SCALE = envNumber('FUZZ_RUNS') ?? 1;

export function runs(base: number): number {
  return Math.max(1, Math.round(base * SCALE));
}

function report<Ts>(name: string, details: fc.RunDetails<Ts>): void {
  const failures = details.failed ? 1 : 0;
  process.stdout.write(
    `fuzz ${name}: seed=${details.seed} cases=${details.numRuns} failures=${failures}` +
      (details.failed ? ` path=${JSON.stringify(details.counterexamplePath)}` : '') +
      '\n',
  );
}

/** Runs a property with the run's seed; throws fast-check's report (counterexample, seed, path) on failure. */
export async function fuzz<Ts extends [unknown, ...unknown[]]>(
  name: string,
  property: fc.IAsyncProperty<Ts> | fc.IProperty<Ts>,
  baseRuns: number,
): Promise<number> {
  const details = await fc.check(property, { seed: SEED, numRuns: runs(baseRuns), endOnFailure: false });
  report(name, details);
  if (details.failed) {
    const cause =
      details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    // Counterexamples can be megabytes (huge bodies): the report is cut, the seed and path replay it whole.
    const report = (fc.defaultReportMessage(details) ?? '').slice(0, 6000);
    const message = `fuzz ${name} failed: ${cause.slice(0, 4000)}\nreplay with FUZZ_SEED=${details.seed}\n${report}`;
    process.stdout.write(`${message}\n`);
    throw new Error(message);
  }
  return details.numRuns;
}
