/** A steady stream of requests through gorouter, counting every answer that is not a 200. */
import type { RouterRig } from '@opi/router-rig';

export interface LoadResult {
  sent: number;
  failed: { status: number; body: string; atMs: number }[];
  /** Pods that answered, by name (the `pod` of the simulator's or the fake kubelet's JSON answer). */
  pods: Map<string, number>;
}

function podOf(body: string): string | undefined {
  try {
    const pod = (JSON.parse(body) as { pod?: unknown }).pod;
    return typeof pod === 'string' ? pod : undefined;
  } catch {
    return undefined;
  }
}

/** A steady `perSecond` requests through gorouter to `host`, until stopped; every answer but 200 is a failure. */
export function steadyLoad(rig: RouterRig, host: string, perSecond: number): { stop(): Promise<LoadResult> } {
  const result: LoadResult = { sent: 0, failed: [], pods: new Map() };
  const started = Date.now();
  const inFlight = new Set<Promise<void>>();
  const timer = setInterval(() => {
    result.sent++;
    const p = rig
      .get(host)
      .then((r) => {
        if (r.status !== 200)
          result.failed.push({ status: r.status, body: r.body.slice(0, 200), atMs: Date.now() - started });
        const pod = r.status === 200 ? podOf(r.body) : undefined;
        if (pod) result.pods.set(pod, (result.pods.get(pod) ?? 0) + 1);
      })
      .catch((err: unknown) => {
        result.failed.push({
          status: 0,
          body: err instanceof Error ? err.message : String(err),
          atMs: Date.now() - started,
        });
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }, 1000 / perSecond);
  return {
    stop: async () => {
      clearInterval(timer);
      await Promise.all([...inFlight]);
      return result;
    },
  };
}
