/**
 * What a seeded run counts once it is over: CC's completions per task, the managed Deployments per LRP,
 * and the tally against CC's model (present with the right spec, lost, stopped, left over, once, repeated).
 */
import type { AppsV1Api } from '@kubernetes/client-node';
import type { FakeCc } from '../support/fake-cc.js';
import type { AppModel, TaskModel } from './cc-model.js';
import { NAMESPACE } from './config.js';

/** Completion callbacks CC processed (answered below 500), by task guid; the path names the task. */
export function deliveries(cc: FakeCc): Map<string, number> {
  const out = new Map<string, number>();
  for (const [guid, answered] of deliveryTimes(cc)) out.set(guid, answered.length);
  return out;
}

/** When CC answered each task's completions (below 500: CC took or refused it), by task guid. */
export function deliveryTimes(cc: FakeCc): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const c of cc.calls) {
    const m = /^\/internal\/v4\/tasks\/([^/]+)\/completed$/.exec(c.path);
    if (!m?.[1] || c.status === undefined || c.status >= 500) continue;
    out.set(m[1], [...(out.get(m[1]) ?? []), c.answeredAt ?? 0]);
  }
  return out;
}

/**
 * How close to CC's answer a worker's SIGKILL may have kept it from recording the delivery: after the
 * answer, or shortly before it (the kill is noted before the signal is sent, and CC answers a post that
 * was in flight when its worker died). A worker killed in that window cannot know CC took the report,
 * so its job's retry posts again: no design avoids that short of CC deduplicating, which it does (400).
 * It is generous against a loaded machine.
 */
const KILL_WINDOW_MS = 1000;

export interface Counts {
  seed: number;
  desired: number;
  presentCorrect: number;
  lost: number;
  wrongSpec: number;
  stopped: number;
  leftover: number;
  duplicateDeployments: number;
  unknownDeployments: number;
  tasks: number;
  callbacksOnce: number;
  missing: number;
  duplicated: number;
  /** Repeats whose first delivery was answered within KILL_WINDOW_MS of a worker's SIGKILL. */
  repeatedAfterKill: number;
  unknownCallbacks: number;
}

export async function clusterDeployments(
  apps: AppsV1Api,
): Promise<Map<string, { replicas: number; image: string; annotation: string }[]>> {
  const out = new Map<string, { replicas: number; image: string; annotation: string }[]>();
  let token: string | undefined;
  do {
    const page = await apps.listNamespacedDeployment({
      namespace: NAMESPACE,
      labelSelector: 'app.kubernetes.io/managed-by=opi-server',
      limit: 500,
      _continue: token,
    });
    for (const d of page.items) {
      const pg = d.metadata?.annotations?.['cloudfoundry.org/process_guid'];
      if (!pg || d.metadata?.deletionTimestamp) continue;
      const entry = {
        replicas: d.spec?.replicas ?? 0,
        image: d.spec?.template.spec?.containers[0]?.image ?? '',
        annotation: d.metadata?.annotations?.['cloudfoundry.org/last_updated'] ?? '',
      };
      out.set(pg, [...(out.get(pg) ?? []), entry]);
    }
    token = page.metadata?._continue;
  } while (token);
  return out;
}

export async function count(
  seed: number,
  model: AppModel[],
  tasks: TaskModel[],
  cc: FakeCc,
  apps: AppsV1Api,
  killedAt: readonly number[] = [],
): Promise<Counts> {
  const deps = await clusterDeployments(apps);
  const got = deliveryTimes(cc);
  const known = new Set(model.map((a) => a.pg));
  const taskGuids = new Set(tasks.filter((t) => t.created).map((t) => t.guid));
  const c: Counts = {
    seed,
    desired: 0,
    presentCorrect: 0,
    lost: 0,
    wrongSpec: 0,
    stopped: 0,
    leftover: 0,
    duplicateDeployments: 0,
    unknownDeployments: [...deps.keys()].filter((pg) => !known.has(pg)).length,
    tasks: taskGuids.size,
    callbacksOnce: 0,
    missing: 0,
    duplicated: 0,
    repeatedAfterKill: 0,
    unknownCallbacks: [...got.keys()].filter((g) => !taskGuids.has(g)).length,
  };
  for (const [, ds] of deps) if (ds.length > 1) c.duplicateDeployments += ds.length - 1;
  for (const a of model) {
    const ds = deps.get(a.pg) ?? [];
    if (a.wanted === 'running') {
      c.desired++;
      const d = ds[0];
      if (!d) c.lost++;
      else if (d.replicas === a.instances && d.image === a.image && d.annotation === a.annotation)
        c.presentCorrect++;
      else c.wrongSpec++;
    } else {
      c.stopped++;
      if (ds.length > 0) c.leftover++;
    }
  }
  for (const g of taskGuids) {
    const answered = got.get(g) ?? [];
    const first = answered[0] ?? 0;
    if (answered.length === 0) c.missing++;
    else if (answered.length === 1) c.callbacksOnce++;
    else if (answered.length === 2 && killedAt.some((k) => Math.abs(k - first) <= KILL_WINDOW_MS))
      c.repeatedAfterKill++;
    else c.duplicated++;
  }
  return c;
}

export function converged(c: Counts): boolean {
  return (
    c.lost === 0 &&
    c.wrongSpec === 0 &&
    c.leftover === 0 &&
    c.duplicateDeployments === 0 &&
    c.unknownDeployments === 0 &&
    c.missing === 0
  );
}
