/**
 * Fault injection for tests around any `KubernetesPort` (the client-node adapter against the simulated
 * cluster, usually): a chosen call fails before it runs, fails after its write took effect (an answer lost
 * to a time-out), or never answers (what a worker killed mid-call saw). Rules can be added and cleared
 * while a test runs. A rule names a resource and a verb, as the Role does. `watch`, `getNamespace` and
 * `getServerVersion` are not covered: the simulator's own faults cut watch streams.
 */
import { KubeApiError } from '../port/errors.js';
import {
  type KubernetesPort,
  type ResourceClient,
  type ResourceName,
  type ResourceObjects,
  type ResourceVerbs,
  isResourceName,
} from '../port/port.js';

/**
 * `before`: the call does not run and rejects. `after`: the call runs and its result is replaced by the
 * rejection (a call that failed by itself keeps its own error and does not use up the rule). `hang`: the
 * call does not run and never settles.
 */
export type FaultTiming = 'before' | 'after' | 'hang';

interface RuleOf<R extends ResourceName, V extends ResourceVerbs[R]> {
  resource: R;
  verb: V;
  /** Only calls whose arguments it accepts; every call of the verb without it. */
  match?: (...args: Parameters<ResourceClient<ResourceObjects[R]>[V]>) => boolean;
  /** Default `before`. */
  when?: FaultTiming;
  /** How many calls it fails (default 1); `Infinity` until cleared. */
  times?: number;
  /** Default: a transient 503 ServiceUnavailable `KubeApiError`, fresh for every call. */
  error?: () => Error;
}

/** One rule, typed by the resource and verb it names (so `match` gets that verb's arguments). */
export type FaultRule = {
  [R in ResourceName]: { [V in ResourceVerbs[R]]: RuleOf<R, V> }[ResourceVerbs[R]];
}[ResourceName];

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
export function unavailableError(operation: string): KubeApiError {
  return new KubeApiError({
    status: 503,
    reason: 'ServiceUnavailable',
    message: 'injected fault: the server is currently unable to handle the request',
    transient: true,
    retryAfterSeconds: 1,
    operation,
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

  matches(resource: string, verb: string, args: unknown[]): boolean {
    if (this.remaining <= 0 || this.rule.resource !== resource || this.rule.verb !== verb) return false;
    const match = this.rule.match as ((...a: unknown[]) => boolean) | undefined;
    return match ? match(...args) : true;
  }

  use(): Error {
    this.fired++;
    this.remaining--;
    if (this.remaining <= 0) this.rules.delete(this);
    return this.rule.error ? this.rule.error() : unavailableError(`${this.rule.verb} ${this.rule.resource}`);
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

  const run = async (
    resource: string,
    verb: string,
    args: unknown[],
    call: () => Promise<unknown>,
  ): Promise<unknown> => {
    const rule = [...active].find((a) => a.matches(resource, verb, args));
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

  return aroundCalls(port, run, { faults }) as FaultyKubernetes;
}

/** `resource.verb`, as a rule or a hook names a call. */
export type CallName = { [R in ResourceName]: `${R}.${ResourceVerbs[R]}` }[ResourceName];

/** Runs instead of each resource verb's call; `call` runs the real one. */
export type Around = (
  resource: ResourceName,
  verb: string,
  args: unknown[],
  call: () => Promise<unknown>,
) => Promise<unknown>;

/**
 * `port` with every resource verb's call passed through `around` (the one decorator behind withFaults and
 * the tests' hooks and jitter), and `extras`' properties beside the port's. `watch`, `getNamespace` and
 * `getServerVersion` pass through unchanged.
 */
export function aroundCalls<P extends KubernetesPort>(port: P, around: Around, extras: object = {}): P {
  const wrap = (resource: ResourceName, client: object): object =>
    new Proxy(client, {
      get(target, verb) {
        const value: unknown = Reflect.get(target, verb, target);
        if (typeof value !== 'function' || typeof verb !== 'string') return value;
        const fn = value as (...a: unknown[]) => Promise<unknown>;
        return (...args: unknown[]) => around(resource, verb, args, () => fn.apply(target, args));
      },
    });
  const wrapped = new Map<ResourceName, object>();
  return new Proxy(port, {
    get(target, prop) {
      if (Object.hasOwn(extras, prop)) return Reflect.get(extras, prop) as unknown;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof prop === 'string' && isResourceName(prop) && typeof value === 'object' && value !== null) {
        let client = wrapped.get(prop);
        if (!client) wrapped.set(prop, (client = wrap(prop, value)));
        return client;
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
