/**
 * Run-time fault injection for the simulated apiserver: latency, error answers (500/503/429 with
 * Retry-After), dropped connections, conflicts on writes, and cut watch streams. Switched through the
 * library (`sim.faults.set`) or the admin endpoint (`PUT /sim/faults`).
 */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

export interface FaultConfig {
  /** Added to every matching request, plus up to jitterMs more. */
  latencyMs: number;
  jitterMs: number;
  /** Share of matching requests answered with one of errorCodes instead of being served. */
  errorRate: number;
  errorCodes: number[];
  /** Sent as Retry-After (and details.retryAfterSeconds) on 429 and 503. */
  retryAfterSeconds: number;
  /** Share of matching requests whose connection is destroyed without an answer. */
  dropRate: number;
  /** Share of matching update/patch requests answered 409 Conflict. */
  conflictRate: number;
  /** Only these verbs / resources (plural, e.g. "deployments") are affected; empty means all. */
  verbs: Verb[];
  resources: string[];
}

export const NO_FAULTS: FaultConfig = {
  latencyMs: 0,
  jitterMs: 0,
  errorRate: 0,
  errorCodes: [500, 503, 429],
  retryAfterSeconds: 1,
  dropRate: 0,
  conflictRate: 0,
  verbs: [],
  resources: [],
};

const VERBS: readonly Verb[] = [
  'get',
  'list',
  'watch',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
];

export type FaultDecision =
  | { kind: 'none'; delayMs: number }
  | { kind: 'error'; code: number; delayMs: number }
  | { kind: 'drop'; delayMs: number }
  | { kind: 'conflict'; delayMs: number };

export class Faults {
  private config: FaultConfig = { ...NO_FAULTS };
  private readonly watchCutters = new Set<() => void>();
  /** Counts of injected faults, for tests and /sim/faults. */
  readonly injected = { errors: 0, drops: 0, conflicts: 0, watchesCut: 0 };

  constructor(private readonly random: () => number) {}

  get current(): FaultConfig {
    return { ...this.config };
  }

  /** Merges a partial configuration, validating it; returns the result. */
  set(partial: Partial<FaultConfig>): FaultConfig {
    const next = { ...this.config, ...partial };
    for (const k of ['latencyMs', 'jitterMs', 'retryAfterSeconds'] as const) {
      if (!Number.isFinite(next[k]) || next[k] < 0) throw new Error(`${k} must be a number ≥ 0`);
    }
    for (const k of ['errorRate', 'dropRate', 'conflictRate'] as const) {
      if (!Number.isFinite(next[k]) || next[k] < 0 || next[k] > 1)
        throw new Error(`${k} must be between 0 and 1`);
    }
    if (
      !Array.isArray(next.errorCodes) ||
      next.errorCodes.some((c) => !Number.isInteger(c) || c < 400 || c > 599)
    ) {
      throw new Error('errorCodes must be HTTP error codes');
    }
    if (!Array.isArray(next.verbs) || next.verbs.some((v) => !VERBS.includes(v))) {
      throw new Error(`verbs must be among ${VERBS.join(', ')}`);
    }
    if (!Array.isArray(next.resources) || next.resources.some((r) => typeof r !== 'string')) {
      throw new Error('resources must be a list of resource names');
    }
    this.config = next;
    return this.current;
  }

  reset(): void {
    this.config = { ...NO_FAULTS };
  }

  decide(verb: Verb, resource: string): FaultDecision {
    const c = this.config;
    const applies =
      (c.verbs.length === 0 || c.verbs.includes(verb)) &&
      (c.resources.length === 0 || c.resources.includes(resource));
    if (!applies) return { kind: 'none', delayMs: 0 };
    const delayMs = c.latencyMs + (c.jitterMs > 0 ? this.random() * c.jitterMs : 0);
    if (c.dropRate > 0 && this.random() < c.dropRate) {
      this.injected.drops++;
      return { kind: 'drop', delayMs };
    }
    if (c.errorRate > 0 && this.random() < c.errorRate && c.errorCodes.length > 0) {
      this.injected.errors++;
      const code = c.errorCodes[Math.floor(this.random() * c.errorCodes.length)] ?? 500;
      return { kind: 'error', code, delayMs };
    }
    if ((verb === 'update' || verb === 'patch') && c.conflictRate > 0 && this.random() < c.conflictRate) {
      this.injected.conflicts++;
      return { kind: 'conflict', delayMs };
    }
    return { kind: 'none', delayMs };
  }

  /** Watch streams register how to cut them. */
  onCut(cut: () => void): () => void {
    this.watchCutters.add(cut);
    return () => this.watchCutters.delete(cut);
  }

  /** Ends every open watch stream now; returns how many were cut. */
  cutWatches(): number {
    const cutters = [...this.watchCutters];
    this.watchCutters.clear();
    for (const cut of cutters) cut();
    this.injected.watchesCut += cutters.length;
    return cutters.length;
  }
}
