/** Wrappers around a KubernetesPort that put another actor's move, or random delays, between a test's calls. */
import type { KubernetesPort } from '@opi/kube';

type Method = keyof KubernetesPort;

/** The port with one-shot hooks run before a call: another actor's move at exactly that point. */
export type HookedKubernetes<P extends KubernetesPort> = P & {
  /** A hook runs once, before the next call of its method (it is cleared first, so calls it makes pass). */
  readonly before: Partial<Record<Method, () => Promise<void>>>;
};

export function withHooks<P extends KubernetesPort>(port: P): HookedKubernetes<P> {
  const before: Partial<Record<Method, () => Promise<void>>> = {};
  return new Proxy(port, {
    get(target, prop) {
      if (prop === 'before') return before;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function' || typeof prop !== 'string' || prop === 'watch') return value;
      const fn = value as (...a: unknown[]) => Promise<unknown>;
      const method = prop as Method;
      return async (...args: unknown[]): Promise<unknown> => {
        const hook = before[method];
        before[method] = undefined;
        if (hook) await hook();
        return fn.apply(target, args);
      };
    },
  }) as HookedKubernetes<P>;
}

/** The port with every call delayed by 0–3 event-loop turns (seeded), so concurrent runs meet anywhere. */
export function jittery(port: KubernetesPort, seed: number): KubernetesPort {
  let state = seed;
  const next = (): number => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  return new Proxy(port, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function' || prop === 'watch') return value;
      const fn = value as (...a: unknown[]) => Promise<unknown>;
      return async (...args: unknown[]): Promise<unknown> => {
        for (let n = Math.floor(next() * 4); n > 0; n--) {
          await new Promise<void>((r) => setImmediate(r));
        }
        return fn.apply(target, args);
      };
    },
  });
}
