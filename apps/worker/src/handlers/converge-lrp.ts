/**
 * converge-lrp: makes the cluster match the LRP's latest record. Desired → the registry Secret, the
 * workload (a Deployment, or a StatefulSet in that mode) and the PodDisruptionBudget exist with our spec;
 * stopped → its workloads of either kind are gone (their Secret, PDB, ReplicaSets and pods follow through
 * ownerReferences). Safe to run twice, late, or after a newer request: it never acts on the payload, only
 * on the record it reads now. A StatefulSet it replaced gets its rollout watched (settle-rollout.ts).
 */
import { ConflictError, type KubernetesPort, type Stored, createOrGet } from '@opi/kube';
import type { DesiredLrp, LrpRecord, WorkloadKind } from '@opi/domain';
import {
  ANNOTATION_GENERATION,
  lrpSelectorString,
  omittedFields,
  ownedBy,
  pdbFor,
  registrySecret,
  registrySecretName,
  workloadName,
} from '@opi/translation';
import type { HandlerDeps } from '../deps.js';
import type { Converged, NoRecord, Stopped } from './outcome.js';
import { asRefusal } from './refusal.js';
import { rolloutCheckDelayMs } from './settle-rollout.js';
import { OTHER_KIND, type Workload, workloadVerbs } from './workload-verbs.js';

/** Runs of one converge when writes meet Conflicts (another converge of the same LRP wrote in between). */
const CONFLICT_ATTEMPTS = 3;

export interface ConvergeHints {
  /**
   * The LRP was just desired from nothing: create before reading (one call instead of two), and skip
   * removing a Secret and PDB that cannot exist yet. Wrong hints cost a call, never correctness.
   */
  fresh?: boolean;
  /**
   * The watch saw the workload deleted or its spec changed by someone else: write the record's spec even
   * when the workload carries the record's generation (a hand edit keeps the stamp). Writing a spec the
   * workload already has changes nothing on the API server, so a repair of our own repair ends there.
   */
  repair?: boolean;
}

export async function convergeLrp(
  deps: HandlerDeps,
  processGuid: string,
  hints: ConvergeHints = {},
): Promise<NoRecord | Converged | Stopped> {
  // A Conflict means someone else wrote since we read: start again from the record, never from the
  // object alone (the other writer may have applied a newer record than ours).
  for (let attempt = 1; ; attempt++) {
    try {
      return await convergeOnce(deps, processGuid, {
        fresh: attempt === 1 && hints.fresh === true,
        repair: hints.repair === true,
      });
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt >= CONFLICT_ATTEMPTS) throw err;
    }
  }
}

async function convergeOnce(
  deps: HandlerDeps,
  processGuid: string,
  hints: Required<ConvergeHints>,
): Promise<NoRecord | Converged | Stopped> {
  // No record: it expired, or Redis lost it (then the sync rebuilds it from the cluster).
  const record = await deps.store.get(processGuid);
  if (!record) return { kind: 'no-record' };
  if (record.state === 'stopped') return stop(deps, record);
  return apply(deps, record.lrp, record.generation, hints).catch((err: unknown) => {
    throw asRefusal(err, processGuid, record.generation);
  });
}

async function stop(deps: HandlerDeps, record: Extract<LrpRecord, { state: 'stopped' }>): Promise<Stopped> {
  const selector = lrpSelectorString(record.guid, record.version);
  const deleted: Record<WorkloadKind, number> = { deployment: 0, statefulset: 0 };
  for (const kind of ['deployment', 'statefulset'] as const) {
    const v = workloadVerbs(deps.kube, kind);
    for (const w of (await v.list(record.namespace, selector)).items) {
      await v.delete(w.metadata.namespace ?? record.namespace ?? '', w.metadata.name);
      deleted[kind]++;
    }
  }
  // The pull secret is created before the workload (and owned by it only afterwards): if the workload
  // never came to be, nothing would collect it, and it holds credentials.
  if (record.namespace && record.appName !== undefined) {
    const names = {
      appName: record.appName,
      spaceName: record.spaceName ?? '',
      processGuid: record.processGuid,
    };
    await deps.kube.secrets.delete(record.namespace, registrySecretName(names));
  }
  await deps.store.confirmStopped(record.processGuid, record.generation);
  return { kind: 'stopped', deployments: deleted.deployment, statefulsets: deleted.statefulset };
}

async function apply(
  deps: HandlerDeps,
  lrp: DesiredLrp,
  generation: number,
  { fresh, repair }: Required<ConvergeHints>,
): Promise<Converged> {
  const { kube } = deps;
  const ns = lrp.namespace;
  const name = workloadName(lrp);

  // The pull secret first, so the first pods can pull; owned by the workload once it exists.
  const secret = registrySecret(lrp);
  if (secret) await upsertSecret(kube, ns, secret.metadata.name, secret);

  // The configured kind first; an LRP that already runs as the other kind (made before the mode changed)
  // keeps it: a workload is never converted in place. A fresh desire reads nothing (the hint says no
  // workload can exist yet).
  let v = workloadVerbs(kube, deps.workloadKind ?? 'deployment');
  let workload = fresh ? undefined : await v.get(ns, name);
  if (!workload && !fresh) {
    const other = workloadVerbs(kube, OTHER_KIND[v.kind]);
    const found = await other.get(ns, name);
    if (found) [v, workload] = [other, found];
  }
  const desired = v.build(lrp, deps);
  desired.metadata.annotations = {
    ...desired.metadata.annotations,
    [ANNOTATION_GENERATION]: String(generation),
  };
  const omitted = omittedFields(desired.metadata.annotations);
  if (omitted.length) {
    deps.logger.warn(
      { processGuid: lrp.processGuid, omitted },
      'too large for the workload: kept in Redis only',
    );
  }
  let action: Converged['action'] = 'unchanged';
  if (!workload) {
    const made = await createOrGet(
      () => v.create(ns, desired),
      () => v.get(ns, name),
    );
    if (made.created) {
      workload = made.object;
      action = 'created';
    } else {
      // Taken, then gone before the read (a stop deleted it): the create's refusal stands.
      if (!made.existing) throw made.refusal;
      workload = made.existing;
    }
  }
  const behind = !sameGeneration(workload, generation);
  if (action !== 'created' && (behind || repair)) {
    // Replace with the read resourceVersion: a concurrent change is a Conflict, retried with a fresh read.
    const read = workload.metadata.resourceVersion;
    workload = await v.replace(ns, {
      ...desired,
      metadata: { ...desired.metadata, resourceVersion: read },
    });
    // A repair that found the record's spec in place wrote nothing (no new resourceVersion).
    action = behind ? 'updated' : workload.metadata.resourceVersion === read ? 'unchanged' : 'repaired';
    // A StatefulSet's rollout is watched so that crash-looping old pods cannot hold it up.
    if (v.kind === 'statefulset' && action !== 'unchanged') {
      await deps.producer.settleRollout(
        { processGuid: lrp.processGuid, generation, check: 0 },
        rolloutCheckDelayMs(0),
      );
    }
  }

  if (secret) {
    const current = await kube.secrets.get(ns, secret.metadata.name);
    if (current && !current.metadata.ownerReferences?.some((r) => r.uid === workload.metadata.uid)) {
      await kube.secrets.replace(ns, {
        ...ownedBy(secret, workload),
        metadata: {
          ...ownedBy(secret, workload).metadata,
          resourceVersion: current.metadata.resourceVersion,
        },
      });
    }
  } else if (!(fresh && action === 'created')) {
    // Whatever the action: a retry after a failed delete finds the workload already up to date. Only a
    // workload just created for a fresh desire skips it: a Secret of an earlier generation was owned
    // by an earlier workload (collected with it) or deleted by the stop in between. (One created just
    // before a worker died, never owned, stays until the stop; it holds this app's own credentials.)
    await kube.secrets.delete(ns, registrySecretName(lrp));
  }

  // Clusters before 1.21 have no policy/v1: their LRPs get none (the worker warned at start).
  if (deps.pdbs !== false) await convergePdb(kube, lrp, workload, action);
  return { kind: 'converged', action, workload: v.kind, namespace: ns, name, generation };
}

/** The PDB an LRP of more than one instance has, owned by its workload; none for one instance. */
async function convergePdb(
  kube: KubernetesPort,
  lrp: DesiredLrp,
  workload: Stored<Workload>,
  action: Converged['action'],
): Promise<void> {
  const ns = lrp.namespace;
  const pdb = pdbFor(lrp);
  if (pdb) {
    const owned = ownedBy(pdb, workload);
    const current = await kube.poddisruptionbudgets.get(ns, pdb.metadata.name);
    if (!current) await createOrGet(() => kube.poddisruptionbudgets.create(ns, owned));
  } else if (action !== 'created') {
    // Whatever the action (as for the Secret), or a retry would leave the PDB of a scale-down behind. A PDB is
    // only ever created owned by a workload, so none but a doomed one can exist next to a new one.
    await kube.poddisruptionbudgets.delete(ns, workloadName(lrp));
  }
}

function sameGeneration(d: Workload, generation: number): boolean {
  return d.metadata.annotations?.[ANNOTATION_GENERATION] === String(generation);
}

async function upsertSecret(
  kube: KubernetesPort,
  ns: string,
  name: string,
  secret: NonNullable<ReturnType<typeof registrySecret>>,
): Promise<void> {
  let latest = await kube.secrets.get(ns, name);
  if (!latest) {
    const made = await createOrGet(
      () => kube.secrets.create(ns, secret),
      () => kube.secrets.get(ns, name),
    );
    if (made.created) return;
    latest = made.existing;
  }
  if (latest && JSON.stringify(latest.data) !== JSON.stringify(secret.data)) {
    await kube.secrets.replace(ns, {
      ...secret,
      metadata: {
        ...secret.metadata,
        ownerReferences: latest.metadata.ownerReferences,
        resourceVersion: latest.metadata.resourceVersion,
      },
    });
  }
}
