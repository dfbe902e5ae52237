/**
 * Labels and annotations of LRP workloads. Labels are how the service finds its objects again (names are
 * only unique); annotations carry what does not fit a label value (≤ 63 characters): the 73-character
 * process guid, CC's `last_updated` and the whole desired state (routes, egress rules and placement tags
 * in annotations of their own: kept-annotations.ts), so the cluster alone can rebuild it.
 */
import { type DesiredLrp, LABEL_VALUE } from '@opi/domain';
import type { LabelSelector } from '@opi/kube-objects';
import { annotationBytes, keptAnnotations } from './kept-annotations.js';

export const LABEL_GUID = 'cloudfoundry.org/guid';
export const LABEL_VERSION = 'cloudfoundry.org/version';
export const LABEL_SOURCE_TYPE = 'cloudfoundry.org/source_type';
export const LABEL_APP_GUID = 'cloudfoundry.org/app_guid';
export const LABEL_PROCESS_TYPE = 'cloudfoundry.org/process_type';
export const LABEL_SPACE_GUID = 'cloudfoundry.org/space_guid';
export const LABEL_ORG_GUID = 'cloudfoundry.org/org_guid';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';

export const SOURCE_TYPE_APP = 'APP';
export const MANAGED_BY = 'opi-server';

export const ANNOTATION_PROCESS_GUID = 'cloudfoundry.org/process_guid';
export const ANNOTATION_LAST_UPDATED = 'cloudfoundry.org/last_updated';
/** The record generation a Deployment was last converged to; the sync compares it with the record's. */
export const ANNOTATION_GENERATION = 'opi.cloudfoundry.org/generation';
export const ANNOTATION_APP_NAME = 'cloudfoundry.org/app_name';
export const ANNOTATION_SPACE_NAME = 'cloudfoundry.org/space_name';
export const ANNOTATION_ORG_NAME = 'cloudfoundry.org/org_name';
export const ANNOTATION_DESIRED_LRP = 'cloudfoundry.org/desired_lrp';

/** Every LRP workload of this service, for list and watch. */
export const APP_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY},${LABEL_SOURCE_TYPE}=${SOURCE_TYPE_APP}`;

export function isLabelValue(value: string): boolean {
  return LABEL_VALUE.test(value);
}

/**
 * The workload's labels. A value Kubernetes would refuse is left out rather than failing the desire: only
 * guid and version are needed to find the LRP, and the contract already guarantees those two. Empty
 * values are left out too; they would only match `key=` selectors.
 */
export function labelsFor(lrp: DesiredLrp): Record<string, string> {
  return validLabels([
    [LABEL_GUID, lrp.guid],
    [LABEL_VERSION, lrp.version],
    [LABEL_SOURCE_TYPE, SOURCE_TYPE_APP],
    [LABEL_APP_GUID, lrp.appGuid],
    [LABEL_PROCESS_TYPE, lrp.processType],
    [LABEL_SPACE_GUID, lrp.spaceGuid],
    [LABEL_ORG_GUID, lrp.orgGuid],
    [LABEL_MANAGED_BY, MANAGED_BY],
  ]);
}

/** The candidate labels whose values Kubernetes accepts (see labelsFor for why the others are dropped). */
export function validLabels(candidates: readonly (readonly [string, string])[]): Record<string, string> {
  return Object.fromEntries(candidates.filter(([, value]) => isLabelValue(value)));
}

/** The LRP's identity. A Deployment's selector is immutable, so it holds nothing that an update changes. */
export function selectorFor(lrp: Pick<DesiredLrp, 'guid' | 'version'>): LabelSelector {
  return { matchLabels: { [LABEL_GUID]: lrp.guid, [LABEL_VERSION]: lrp.version } };
}

/** One LRP's objects (its Deployment, pods, Secret, PDB) as a list selector. */
export function lrpSelectorString(guid: string, version: string): string {
  return `${APP_SELECTOR},${LABEL_GUID}=${guid},${LABEL_VERSION}=${version}`;
}

/**
 * The desired state as stored on the workload. Registry credentials never go into annotations (anyone
 * who can read Deployments could read them); they live in the image pull Secret.
 */
export function desiredLrpJson(lrp: DesiredLrp): string {
  // Routes, egress rules and placement tags have annotations of their own (kept-annotations.ts), each
  // with its own room, so that many of them cannot push environment and command off this one.
  const {
    registry: _registry,
    routes: _routes,
    egressRules: _egressRules,
    placementTags: _placementTags,
    ...rest
  } = lrp;
  const json = JSON.stringify(rest);
  if (Buffer.byteLength(json) <= DESIRED_LRP_MAX_BYTES) return json;
  // A large environment or command (CC's VCAP_SERVICES can be hundreds of KiB) would make the whole
  // Deployment invalid: both are in the app container already, and lrpFromWorkload reads them there.
  const { environment: _environment, command: _command, ...small } = rest;
  return JSON.stringify({ ...small, [SPEC_IN_CONTAINER]: true });
}

/**
 * Room for the desired LRP: the API server allows 256 KiB for all of an object's annotations (found by
 * the fuzz tests, test/fuzz). Without environment and command the rest is bounded by the contract.
 */
export const DESIRED_LRP_MAX_BYTES = 160 * 1024;
/** The API server's limit for all of an object's annotations, keys and values (TotalAnnotationSizeLimitB). */
export const ANNOTATIONS_MAX_BYTES = 256 * 1024;
/** Left for the annotations others add: the converge's generation, the Deployment controller's revision. */
export const ANNOTATIONS_RESERVED_BYTES = 1024;
/** Marks a stored desired LRP whose environment and command are only in the app container. */
export const SPEC_IN_CONTAINER = 'environmentAndCommandInContainer';

/**
 * The workload's annotations. `last_updated` is CC's string, byte for byte: CC compares it as is. Routes,
 * egress rules and placement tags get what the others leave of the API server's limit.
 */
export function annotationsFor(lrp: DesiredLrp): Record<string, string> {
  const own = {
    [ANNOTATION_PROCESS_GUID]: lrp.processGuid,
    [ANNOTATION_LAST_UPDATED]: lrp.annotation,
    [ANNOTATION_APP_NAME]: lrp.appName,
    [ANNOTATION_SPACE_NAME]: lrp.spaceName,
    [ANNOTATION_ORG_NAME]: lrp.orgName,
    [ANNOTATION_DESIRED_LRP]: desiredLrpJson(lrp),
  };
  const room = ANNOTATIONS_MAX_BYTES - ANNOTATIONS_RESERVED_BYTES - annotationBytes(own);
  return { ...own, ...keptAnnotations(lrp, room) };
}

/**
 * The pods' annotations: the user's (e.g. prometheus.io/*) plus the process guid, which wins over a user
 * annotation of the same name. Nothing here changes on a scale or a `last_updated` bump, because any
 * change to the pod template rolls every pod.
 */
export function podAnnotationsFor(lrp: DesiredLrp): Record<string, string> {
  return { ...lrp.userAnnotations, [ANNOTATION_PROCESS_GUID]: lrp.processGuid };
}
