/** Wrappers around a KubernetesPort that put another actor's move, or random delays, between a test's calls. */
import type { KubernetesPort } from '@opi/kube';
import { type CallName, aroundCalls } from '@opi/kube/testing';

/** The port with one-shot hooks run before a call: another actor's move at exactly that point. */
export type HookedKubernetes<P extends KubernetesPort> = P & {
  /** A hook runs once, before the next call it names (it is cleared first, so calls it makes pass). */
  readonly before: Partial<Record<CallName, () => Promise<void>>>;
};

export function withHooks<P extends KubernetesPort>(port: P): HookedKubernetes<P> {
  const before: Partial<Record<CallName, () => Promise<void>>> = {};
  return aroundCalls(
    port,
    async (resource, verb, _args, call) => {
      const name = `${resource}.${verb}` as CallName;
      const hook = before[name];
      before[name] = undefined;
      if (hook) await hook();
      return call();
    },
    { before },
  ) as HookedKubernetes<P>;
}

/** The port with every call delayed by 0–3 event-loop turns (seeded), so concurrent runs meet anywhere. */
export function jittery(port: KubernetesPort, seed: number): KubernetesPort {
  let state = seed;
  const next = (): number => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  return aroundCalls(port, async (_resource, _verb, _args, call) => {
    for (let n = Math.floor(next() * 4); n > 0; n--) {
      await new Promise<void>((r) => setImmediate(r));
    }
    return call();
  });
}
