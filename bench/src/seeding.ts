/**
 * LRPs as a converged service leaves them, put in place before a scenario measures: their records in
 * Redis through the service's own StateStore, then (for the reads) their workloads, pods and events
 * straight into the simulated cluster's store.
 */
import type { DesiredLrp, WorkloadKind } from '@opi/domain';
import type { Simulator } from '@opi/kube-sim';
import type { StateStore } from '@opi/state';
import { uuid } from '@opi/contract/testing';
import { podName, podNameFor, seconds, storeLrp } from './app-objects.js';
import { desiredLrp } from './bodies.js';
import { NAMESPACE } from './common.js';
import { plan } from './options.js';

/**
 * Records LRPs `from`..`to` (`lrpOf` makes each) 500 at a time, as the API would; `each` is called with
 * every LRP and its record's generation, in order.
 */
export async function recordLrps(
  state: StateStore,
  from: number,
  to: number,
  lrpOf: (n: number) => DesiredLrp,
  each: (lrp: DesiredLrp, generation: number, n: number) => void,
): Promise<void> {
  for (let i = from; i < to; i += 500) {
    const batch: DesiredLrp[] = [];
    for (let n = i; n < Math.min(to, i + 500); n++) batch.push(lrpOf(n));
    await Promise.all(batch.map((lrp) => state.adopt(lrp)));
    const records = await Promise.all(batch.map((lrp) => state.get(lrp.processGuid)));
    batch.forEach((lrp, j) => {
      each(lrp, records[j]?.generation ?? 0, i + j);
    });
  }
}

// ---- the reads -------------------------------------------------------------------------------------

/** The reads' LRP `n`. */
export const readsLrp = (n: number): DesiredLrp => desiredLrp(uuid(n, 'be'), NAMESPACE);

/** Pods per LRP: the instances scenario's LRPs run 3 (30k pods at 10k LRPs), the others 1. */
export const podsPer = (n: number): number => (n < plan.instancesSize ? 3 : 1);
export const podCount = (size: number): number => size + 2 * Math.min(size, plan.instancesSize);

/**
 * LRPs `from`..`to` as a converged service leaves them: a record, a workload of the kind at the record's
 * generation and its running pods (with one event each for the instances scenario's LRPs). The instances
 * cache is left to the worker's sync, as in production.
 */
export async function seedReads(
  sim: Simulator,
  state: StateStore,
  from: number,
  to: number,
  kind: WorkloadKind,
): Promise<void> {
  const events = sim.store.registry.get('', 'events');
  const startTime = seconds(new Date());
  await recordLrps(state, from, to, readsLrp, (lrp, generation, n) => {
    const names = Array.from({ length: podsPer(n) }, (_, k) => podNameFor(kind, lrp, k));
    storeLrp(sim, lrp, generation, names, NAMESPACE, startTime, kind);
    if (n >= plan.instancesSize) return;
    for (const name of names) {
      sim.store.create(events, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${name}.1`, namespace: NAMESPACE },
        involvedObject: { kind: 'Pod', name, namespace: NAMESPACE },
        reason: 'Started',
        message: 'Started container opi',
        type: 'Normal',
      } as never);
    }
  });
}

// ---- the watch -------------------------------------------------------------------------------------

/** One LRP as the watch seeds it: its record's generation, its pod's name and its other pods' names. */
export interface Seeded {
  lrp: DesiredLrp;
  generation: number;
  pod: string;
  others: string[];
}

/**
 * Every tenth LRP runs three instances, so N apps run 1.2 N pods (the 100,000 apps and
 * 120,000 pods); freshness is timed on the single-instance ones.
 */
export const instancesOf = (n: number): number => (n % 10 === 0 ? 3 : 1);
export const seededPods = (seeded: Seeded[]): number => seeded.reduce((n, s) => n + 1 + s.others.length, 0);

/** The watch's `size` LRPs recorded in `namespace`, with the names their pods will have in the cluster. */
export async function recordWatchLrps(state: StateStore, size: number, namespace: string): Promise<Seeded[]> {
  const seeded: Seeded[] = [];
  const lrpOf = (n: number): DesiredLrp => desiredLrp(uuid(n, 'wc'), namespace, instancesOf(n));
  await recordLrps(state, 0, size, lrpOf, (lrp, generation) => {
    const others = Array.from({ length: lrp.instances - 1 }, (_, k) => podName(lrp, k + 1));
    seeded.push({ lrp, generation, pod: podName(lrp, 0), others });
  });
  return seeded;
}
