/**
 * The pure translation, fuzzed without HTTP: every body the contract's schemas accept becomes Kubernetes
 * objects the API server would accept, in the namespace asked for or the configured one; names made
 * from any string are DNS-1123 labels; and a Deployment gives back the desired LRP it was made from.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  desireLrpSchema,
  stagingRequestSchema,
  taskRequestSchema,
  toDesiredLrp,
  toDesiredStaging,
  toDesiredTask,
} from '@opi/contract';
import {
  jobName,
  lrpFromWorkload,
  lrpToDeployment,
  omittedFields,
  registrySecret,
  workloadName,
} from '@opi/translation';
import {
  anyName,
  crowdedDesireBody,
  desireBody as ordinaryDesireBody,
  labelValue,
  stagingBody,
  taskBody,
} from './arbitraries.js';
import { isDnsLabel, lrpObjectProblems, stagingObjectProblems, taskObjectProblems } from './k8s-validate.js';
import { fuzz } from './run.js';

// Any namespace: the properties are about the objects made in whichever namespace is asked for.
const DEFAULTS = {
  namespace: 'cf-workloads',
  dropletRegistry: 'droplets.example.com',
  allowedNamespaces: 'any' as const,
};

/** Mostly ordinary desires, sometimes ones with more routes and egress rules than the annotations hold. */
const desireBody = fc.oneof(
  { arbitrary: ordinaryDesireBody, weight: 19 },
  { arbitrary: crowdedDesireBody, weight: 1 },
);

function expectNone(problems: string[]): void {
  if (problems.length) throw new Error(problems.join('\n'));
}

describe('translation fuzz', () => {
  it('names made from any app, space and guid are DNS-1123 labels', async () => {
    await fuzz(
      'workloadName and jobName',
      fc.property(anyName, anyName, anyName, (appName, spaceName, guid) => {
        const names = [
          workloadName({ appName, spaceName, processGuid: guid }),
          jobName('task', guid),
          jobName('stage', guid),
        ];
        for (const n of names)
          if (!isDnsLabel(n)) throw new Error(`${JSON.stringify(n)} is not a DNS-1123 label`);
      }),
      3000,
    );
  });

  it('every accepted desire becomes valid objects in the namespace asked for or the configured one', async () => {
    let accepted = 0;
    await fuzz(
      'desire → Deployment, Secret, PDB',
      fc.property(desireBody, (body) => {
        const r = desireLrpSchema.safeParse(body);
        if (!r.success) return;
        accepted++;
        const lrp = toDesiredLrp(r.data, DEFAULTS);
        const ns =
          typeof body['namespace'] === 'string' && body['namespace'] ? body['namespace'] : DEFAULTS.namespace;
        expect(lrp.namespace).toBe(ns);
        expectNone(lrpObjectProblems(lrp, ns));
      }),
      1500,
    );
    expect(accepted).toBeGreaterThan(0);
  });

  it('a Deployment gives back a desired LRP that makes the same Deployment', async () => {
    let omitted = 0;
    await fuzz(
      'desire → Deployment → desire',
      fc.property(desireBody, (body) => {
        const r = desireLrpSchema.safeParse(body);
        if (!r.success) return;
        const lrp = toDesiredLrp(r.data, DEFAULTS);
        const settings = { runAsNonRoot: true };
        const deployment = lrpToDeployment(lrp, settings);
        const back = lrpFromWorkload(deployment, registrySecret(lrp));
        // Routes or egress rules too large to annotate: no record comes back (CC desires it again).
        if (omittedFields(deployment.metadata.annotations ?? {}).length) {
          expect(back).toBeUndefined();
          omitted++;
          return;
        }
        if (!back) throw new Error('no desired LRP read back');
        // Routes, egress rules and placement tags come back as the record holds them (JSON, in Redis).
        const kept = (l: typeof lrp) => ({
          routes: l.routes,
          egressRules: l.egressRules,
          placementTags: l.placementTags,
        });
        expect(kept(back)).toEqual(JSON.parse(JSON.stringify(kept(lrp))));
        // Rebuilt from the container when too large to annotate, variables the service sets itself (PORT,
        // CF_INSTANCE_*) may differ in the record, never in what runs: the same Deployment comes out.
        // (The stored record itself, the desired_lrp annotation, may then differ in those variables.)
        const again = lrpToDeployment(back, settings);
        expect(again.spec).toEqual(deployment.spec);
        expect(again.metadata.name).toBe(deployment.metadata.name);
        expect(again.metadata.labels).toEqual(deployment.metadata.labels);
      }),
      800,
    );
    process.stdout.write(
      `fuzz desire → Deployment → desire: ${omitted} with a field too large to annotate\n`,
    );
  });

  it('every accepted task and staging becomes valid objects', async () => {
    await fuzz(
      'task → Job, Secret',
      fc.property(labelValue, taskBody, (guid, body) => {
        const r = taskRequestSchema.safeParse(body);
        if (!r.success) return;
        const task = toDesiredTask(guid, r.data, DEFAULTS);
        expectNone(taskObjectProblems(task, r.data.namespace || DEFAULTS.namespace));
      }),
      1000,
    );
    await fuzz(
      'staging → Job',
      fc.property(labelValue, stagingBody, (guid, body) => {
        const r = stagingRequestSchema.safeParse(body);
        if (!r.success) return;
        expectNone(stagingObjectProblems(toDesiredStaging(guid, r.data, DEFAULTS), DEFAULTS.namespace));
      }),
      1000,
    );
  });
});
