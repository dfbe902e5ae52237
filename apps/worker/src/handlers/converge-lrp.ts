/**
 * converge-lrp: makes the cluster match the LRP's latest record. Desired → the registry Secret, the
 * Deployment and the PodDisruptionBudget exist with our spec; stopped → its Deployments are gone (their
 * Secret, PDB, ReplicaSets and pods follow through ownerReferences). Safe to run twice, late, or after
 * a newer request: it never acts on the payload, only on the record it reads now.
 */
import { AlreadyExistsError, ConflictError, type KubernetesPort } from '@opi/kube';
import type { DesiredLrp, LrpRecord } from '@opi/domain';
import {
  ANNOTATION_GENERATION,
  type Deployment,
  lrpSelectorString,
  lrpToDeployment,
  ownedBy,
  pdbFor,
  registrySecret,
  registrySecretName,
  workloadName,
} from '@opi/translation';
import type { HandlerDeps } from '../deps.js';

/** Runs of one converge when writes meet Conflicts (another converge of the same LRP wrote in between). */
const CONFLICT_ATTEMPTS = 3;

export interface ConvergeHints {
  /**
   * The LRP was just desired from nothing: create before reading (one call instead of two), and skip
   * removing a Secret and PDB that cannot exist yet. Wrong hints cost a call, never correctness.
   */
  fresh?: boolean;
}

export async function convergeLrp(
  deps: HandlerDeps,
  processGuid: string,
  hints: ConvergeHints = {},
): Promise<string> {
  // A Conflict means someone else wrote since we read: start again from the record, never from the
  // object alone (the other writer may have applied a newer record than ours).
  for (let attempt = 1; ; attempt++) {
    try {
      return await convergeOnce(deps, processGuid, attempt === 1 && hints.fresh === true);
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt >= CONFLICT_ATTEMPTS) throw err;
    }
  }
}

async function convergeOnce(deps: HandlerDeps, processGuid: string, fresh: boolean): Promise<string> {
  const record = await deps.store.get(processGuid);
  if (!record) return 'no record (the sync rebuilds or it expired)';
  if (record.state === 'stopped') return stop(deps, record);
  return apply(deps, record.lrp, record.generation, fresh);
}

async function stop(deps: HandlerDeps, record: Extract<LrpRecord, { state: 'stopped' }>): Promise<string> {
  const found = await deps.kube.listDeployments(
    record.namespace,
    lrpSelectorString(record.guid, record.version),
  );
  for (const d of found.items) {
    await deps.kube.deleteDeployment(d.metadata.namespace ?? record.namespace ?? '', d.metadata.name);
  }
  // The pull secret is created before the Deployment (and owned by it only afterwards): if the
  // Deployment never came to be, nothing would collect it, and it holds credentials.
  if (record.namespace && record.appName !== undefined) {
    const names = {
      appName: record.appName,
      spaceName: record.spaceName ?? '',
      processGuid: record.processGuid,
    };
    await deps.kube.deleteSecret(record.namespace, registrySecretName(names));
  }
  await deps.store.confirmStopped(record.processGuid, record.generation);
  return `stopped: ${found.items.length} deployment(s) deleted`;
}

async function apply(
  deps: HandlerDeps,
  lrp: DesiredLrp,
  generation: number,
  fresh: boolean,
): Promise<string> {
  const { kube } = deps;
  const ns = lrp.namespace;
  const name = workloadName(lrp);
  const desired = lrpToDeployment(lrp, { runAsNonRoot: deps.runAsNonRoot });
  desired.metadata.annotations = {
    ...desired.metadata.annotations,
    [ANNOTATION_GENERATION]: String(generation),
  };

  // The pull secret first, so the first pods can pull; owned by the Deployment once it exists.
  const secret = registrySecret(lrp);
  if (secret) await upsertSecret(kube, ns, secret.metadata.name, secret);

  let deployment = fresh ? undefined : await kube.getDeployment(ns, name);
  let action = 'unchanged';
  if (!deployment) {
    try {
      deployment = await kube.createDeployment(ns, desired);
      action = 'created';
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
      deployment = await kube.getDeployment(ns, name);
      if (!deployment) throw err;
    }
  }
  if (action !== 'created' && !sameGeneration(deployment, generation)) {
    // Replace with the read resourceVersion: a concurrent change is a Conflict, retried with a fresh read.
    deployment = await kube.replaceDeployment(ns, {
      ...desired,
      metadata: { ...desired.metadata, resourceVersion: deployment.metadata.resourceVersion },
    });
    action = 'updated';
  }

  if (secret) {
    const current = await kube.getSecret(ns, secret.metadata.name);
    if (current && !current.metadata.ownerReferences?.some((r) => r.uid === deployment.metadata.uid)) {
      await kube.replaceSecret(ns, {
        ...ownedBy(secret, deployment),
        metadata: {
          ...ownedBy(secret, deployment).metadata,
          resourceVersion: current.metadata.resourceVersion,
        },
      });
    }
  } else if (!(fresh && action === 'created')) {
    // Whatever the action: a retry after a failed delete finds the Deployment already up to date. Only a
    // Deployment just created for a fresh desire skips it: a Secret of an earlier generation was owned
    // by an earlier Deployment (collected with it) or deleted by the stop in between. (One created just
    // before a worker died, never owned, stays until the stop; it holds this app's own credentials.)
    await kube.deleteSecret(ns, registrySecretName(lrp));
  }

  const pdb = pdbFor(lrp);
  if (pdb) {
    const owned = ownedBy(pdb, deployment);
    const current = await kube.getPodDisruptionBudget(ns, pdb.metadata.name);
    if (!current) {
      try {
        await kube.createPodDisruptionBudget(ns, owned);
      } catch (err) {
        if (!(err instanceof AlreadyExistsError)) throw err;
      }
    }
  } else if (action !== 'created') {
    // Likewise: not only after a change, or a retry would leave the PDB of a scale-down behind. A PDB is
    // only ever created owned by a Deployment, so none but a doomed one can exist next to a new one.
    await kube.deletePodDisruptionBudget(ns, name);
  }
  return `${action} deployment ${ns}/${name} (generation ${generation})`;
}

function sameGeneration(d: Deployment, generation: number): boolean {
  return d.metadata.annotations?.[ANNOTATION_GENERATION] === String(generation);
}

async function upsertSecret(
  kube: KubernetesPort,
  ns: string,
  name: string,
  secret: NonNullable<ReturnType<typeof registrySecret>>,
): Promise<void> {
  const current = await kube.getSecret(ns, name);
  if (!current) {
    try {
      await kube.createSecret(ns, secret);
      return;
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
    }
  }
  const latest = current ?? (await kube.getSecret(ns, name));
  if (latest && JSON.stringify(latest.data) !== JSON.stringify(secret.data)) {
    await kube.replaceSecret(ns, {
      ...secret,
      metadata: {
        ...secret.metadata,
        ownerReferences: latest.metadata.ownerReferences,
        resourceVersion: latest.metadata.resourceVersion,
      },
    });
  }
}
