/**
 * Fault injection for tests around any `KubernetesPort` (the client-node adapter against the simulated
 * cluster, usually): a chosen call fails before it runs, fails after its write took effect (an answer lost
 * to a time-out), or never answers (what a worker killed mid-call saw). Rules can be added and cleared
 * while a test runs. `watch` is not covered: the simulator's own faults cut watch streams.
 */
import { KubeApiError } from './errors.js';
import type { KubernetesPort } from './port.js';

/** Every port method a rule can name. */
export type FaultableMethod = Exclude<keyof KubernetesPort, 'watch'>;

/**
 * `before`: the call does not run and rejects. `after`: the call runs and its result is replaced by the
 * rejection (a call that failed by itself keeps its own error and does not use up the rule). `hang`: the
 * call does not run and never settles.
 */
export type FaultTiming = 'before' | 'after' | 'hang';

interface RuleOf<M extends FaultableMethod> {
  method: M;
  /** Only calls whose arguments it accepts; every call of the method without it. */
  match?: (...args: Parameters<KubernetesPort[M]>) => boolean;
  /** Default `before`. */
  when?: FaultTiming;
  /** How many calls it fails (default 1); `Infinity` until cleared. */
  times?: number;
  /** Default: a transient 503 ServiceUnavailable `KubeApiError`, fresh for every call. */
  error?: () => Error;
}

/** One rule, typed by the method it names (so `match` gets that method's arguments). */
export type FaultRule = { [M in FaultableMethod]: RuleOf<M> }[FaultableMethod];

export interface InjectedFault {
  /** Calls it failed so far. */
  readonly fired: number;
  /** Calls it will still fail. */
  readonly remaining: number;
  remove(): void;
}

export interface FaultControl {
  inject(rule: FaultRule): InjectedFault;
  /** Removes every rule. */
  clear(): void;
}

export type FaultyKubernetes = KubernetesPort & { readonly faults: FaultControl };

/** The error a rule without its own gives: what a 503 from the API server is classified as. */
export function unavailableError(method: string): KubeApiError {
  return new KubeApiError({
    status: 503,
    reason: 'ServiceUnavailable',
    message: 'injected fault: the server is currently unable to handle the request',
    transient: true,
    retryAfterSeconds: 1,
    operation: method,
  });
}

class Active implements InjectedFault {
  fired = 0;
  remaining: number;

  constructor(
    readonly rule: FaultRule,
    private readonly rules: Set<Active>,
  ) {
    this.remaining = rule.times ?? 1;
  }

  matches(method: string, args: unknown[]): boolean {
    if (this.remaining <= 0 || this.rule.method !== method) return false;
    const match = this.rule.match as ((...a: unknown[]) => boolean) | undefined;
    return match ? match(...args) : true;
  }

  use(): Error {
    this.fired++;
    this.remaining--;
    if (this.remaining <= 0) this.rules.delete(this);
    return this.rule.error ? this.rule.error() : unavailableError(this.rule.method);
  }

  remove(): void {
    this.remaining = 0;
    this.rules.delete(this);
  }
}

/** `port` with the given rules, and `faults` to add or clear rules later. */
export function withFaults(port: KubernetesPort, rules: FaultRule[] = []): FaultyKubernetes {
  const active = new Set<Active>();
  const faults: FaultControl = {
    inject: (rule) => {
      const a = new Active(rule, active);
      if (a.remaining > 0) active.add(a);
      return a;
    },
    clear: () => {
      for (const a of [...active]) a.remove();
    },
  };
  for (const rule of rules) faults.inject(rule);

  const run = async (method: string, args: unknown[], call: () => Promise<unknown>): Promise<unknown> => {
    const rule = [...active].find((a) => a.matches(method, args));
    if (!rule) return call();
    const when = rule.rule.when ?? 'before';
    if (when === 'hang') {
      rule.use();
      return new Promise<never>(() => undefined);
    }
    if (when === 'before') throw rule.use();
    await call();
    throw rule.use();
  };

  return new Proxy(port, {
    get(target, prop) {
      if (prop === 'faults') return faults;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function' || prop === 'watch' || typeof prop !== 'string') return value;
      const fn = value as (...a: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => run(prop, args, () => fn.apply(target, args));
    },
  }) as FaultyKubernetes;
}
