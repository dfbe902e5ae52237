/** A seeded run's chaos plan: every action and its time, drawn up front from the seed's PRNG. */
import type { FaultConfig } from '@opi/kube-sim';
import { CC_DOWN_MS, CHAOS_MS } from './config.js';

export type ChaosAction =
  | { at: number; kind: 'kill-worker'; pick: number; respawnAfterMs: number }
  | { at: number; kind: 'redis-restart'; downMs: number }
  | { at: number; kind: 'redis-flush' }
  | { at: number; kind: 'faults'; config: Partial<FaultConfig>; label: string }
  | { at: number; kind: 'cut-watches' }
  | { at: number; kind: 'cc-down'; ms: number };

/** The whole chaos plan of one seed, drawn up front so the seed alone names it. */
export function plan(rand: () => number): ChaosAction[] {
  const D = CHAOS_MS;
  const between = (lo: number, hi: number) => lo + rand() * (hi - lo);
  const out: ChaosAction[] = [];
  // CC's outage overlaps everything else, and outlasts the rest of the chaos by default.
  out.push({ at: between(0.1, 0.2) * D, kind: 'cc-down', ms: CC_DOWN_MS });
  for (let t = between(2000, 6000); t < D; t += between(3000, 9000)) {
    out.push({ at: t, kind: 'kill-worker', pick: rand(), respawnAfterMs: between(0, 2000) });
  }
  for (let i = 0; i < 2; i++)
    out.push({ at: between(0.1, 0.9) * D, kind: 'redis-restart', downMs: between(500, 3000) });
  out.push({ at: between(0.35, 0.65) * D, kind: 'redis-flush' });
  const phases: [string, Partial<FaultConfig>][] = [
    ['slow', { latencyMs: 150, jitterMs: 350 }],
    ['errors 500/503/429', { errorRate: 0.25, errorCodes: [500, 503, 429], retryAfterSeconds: 1 }],
    ['dropped connections', { dropRate: 0.15 }],
    ['all at once', { latencyMs: 50, jitterMs: 200, errorRate: 0.15, dropRate: 0.08, conflictRate: 0.1 }],
    ['calm', {}],
  ];
  for (let t = between(1000, 3000); t < D; t += between(5000, 12000)) {
    const [label, config] = phases[Math.floor(rand() * phases.length)] ?? ['calm', {}];
    out.push({ at: t, kind: 'faults', label, config });
  }
  for (let i = 0; i < 5; i++) out.push({ at: between(0, 1) * D, kind: 'cut-watches' });
  return out.sort((a, b) => a.at - b.at);
}
