/**
 * settle-rollout: keeps a StatefulSet's rolling update from sticking (see rolloutStep). The converge
 * schedules the first check after each replace of a StatefulSet; each check deletes the old-revision pods
 * that are not ready and schedules the next, spaced out, until every pod runs the new revision, a newer
 * record takes over (its own converge schedules its own checks), or the checks run out. A rollout held
 * up longer is looked at again whenever the watch sees its old-revision pods not ready (a check `once`).
 */
import { lrpSelectorString, rolloutStep, workloadName } from '@opi/translation';
import type { JobPayload } from '@opi/queue';
import type { HandlerDeps } from '../deps.js';
import type { RolloutChecked, Skipped } from './outcome.js';

/** Checks per rollout: spaced 1 s, 2 s, 4 s … up to 30 s apart, they watch it for about five minutes. */
export const ROLLOUT_CHECKS = 14;

/** The wait before check `n` (0-based). */
export function rolloutCheckDelayMs(n: number): number {
  return Math.min(30_000, 1000 * 2 ** n);
}

export async function settleRollout(
  deps: HandlerDeps,
  p: JobPayload<'settleRollout'>,
): Promise<Skipped | RolloutChecked> {
  const record = await deps.store.get(p.processGuid);
  if (record?.state !== 'desired' || record.generation !== p.generation) {
    return { kind: 'skipped', why: 'superseded' };
  }
  const { lrp } = record;
  const sts = await deps.kube.statefulsets.get(lrp.namespace, workloadName(lrp));
  if (!sts) return { kind: 'skipped', why: 'no statefulset' };
  const pods = await deps.kube.pods.list(lrp.namespace, lrpSelectorString(lrp.guid, lrp.version));
  const step = rolloutStep(sts, pods.items);
  if (step.state === 'rolled-out') {
    return { kind: 'rollout-checked', state: step.state, deleted: 0, waiting: 0, last: true };
  }
  const rolling = step.state === 'rolling' ? step : { remove: [], waiting: 0 };
  for (const name of rolling.remove) await deps.kube.pods.delete(lrp.namespace, name);
  const next = p.check + 1;
  const last = p.once === true || next >= ROLLOUT_CHECKS;
  if (!last) await deps.producer.settleRollout({ ...p, check: next }, rolloutCheckDelayMs(next));
  return {
    kind: 'rollout-checked',
    state: step.state,
    deleted: rolling.remove.length,
    waiting: rolling.waiting,
    last,
  };
}
