/**
 * What the Kubernetes API server's validation asks of the objects the translation makes (names, label
 * and annotation keys and values, container, volume and env names, int32 fields), written out once so
 * the fuzz tests can check every object a worker would send. Each function returns the problems found
 * (empty: valid), with the field's path, so a counterexample says what is wrong.
 */
import type { DesiredLrp, DesiredStaging, DesiredTask, LrpRecord } from '@opi/domain';
import {
  lrpSelectorString,
  lrpToDeployment,
  pdbFor,
  registrySecret,
  registrySecretName,
  stagingSelectorString,
  stagingToJob,
  taskRegistrySecret,
  taskSelectorString,
  taskToJob,
} from '@opi/translation';
import type {
  Container,
  Deployment,
  Job,
  LabelSelector,
  ObjectMeta,
  PodDisruptionBudget,
  PodSpec,
  Probe,
  Secret,
  TemplateMeta,
} from '@opi/kube-objects';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN_PART = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
/** k8s.io/apimachinery IsEnvVarName. */
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const INT32_MAX = 2 ** 31 - 1;
/** TotalAnnotationSizeLimitB: keys and values together, in bytes. */
export const ANNOTATIONS_MAX_BYTES = 256 * 1024;

export function isDnsLabel(s: string): boolean {
  return s.length >= 1 && s.length <= 63 && DNS_LABEL.test(s);
}

export function isDnsSubdomain(s: string): boolean {
  return s.length >= 1 && s.length <= 253 && s.split('.').every((p) => DNS_SUBDOMAIN_PART.test(p));
}

export function isLabelValue(s: string): boolean {
  return s.length <= 63 && LABEL_VALUE.test(s);
}

/** A label or annotation key: an optional DNS-subdomain prefix and '/', then a name of at most 63. */
export function isQualifiedName(s: string): boolean {
  const parts = s.split('/');
  if (parts.length > 2) return false;
  const name = parts.length === 2 ? (parts[1] ?? '') : s;
  if (parts.length === 2 && !isDnsSubdomain(parts[0] ?? '')) return false;
  return name.length >= 1 && name.length <= 63 && QUALIFIED_NAME_PART.test(name);
}

function labelProblems(where: string, labels: Record<string, string> | undefined): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    if (!isQualifiedName(k)) out.push(`${where}: label key ${JSON.stringify(k)} is invalid`);
    if (!isLabelValue(v)) out.push(`${where}: label ${k} value ${JSON.stringify(v)} is invalid`);
  }
  return out;
}

function annotationProblems(where: string, annotations: Record<string, string> | undefined): string[] {
  const out: string[] = [];
  let bytes = 0;
  for (const [k, v] of Object.entries(annotations ?? {})) {
    if (!isQualifiedName(k))
      out.push(`${where}: annotation key ${JSON.stringify(k.slice(0, 100))} is invalid`);
    bytes += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (bytes > ANNOTATIONS_MAX_BYTES) out.push(`${where}: annotations are ${bytes} bytes, over 256 KiB`);
  return out;
}

function selectorProblems(where: string, selector: LabelSelector | undefined): string[] {
  return labelProblems(`${where}.matchLabels`, selector?.matchLabels);
}

/** Object metadata; `name` is a DNS-1123 label when the object's name becomes a hostname or a label. */
function metaProblems(
  where: string,
  meta: ObjectMeta | TemplateMeta,
  namespace: string | undefined,
  nameRule: 'label' | 'subdomain' | 'none',
): string[] {
  const out: string[] = [];
  if (nameRule !== 'none') {
    const name = meta.name ?? '';
    const ok = nameRule === 'label' ? isDnsLabel(name) : isDnsSubdomain(name);
    if (!ok) out.push(`${where}.name ${JSON.stringify(name)} is not a DNS-1123 ${nameRule}`);
  }
  if (namespace !== undefined && meta.namespace !== namespace) {
    out.push(`${where}.namespace ${JSON.stringify(meta.namespace)} is not ${JSON.stringify(namespace)}`);
  }
  if (meta.namespace !== undefined && !isDnsLabel(meta.namespace)) {
    out.push(`${where}.namespace ${JSON.stringify(meta.namespace)} is not a DNS-1123 label`);
  }
  out.push(...labelProblems(`${where}.labels`, meta.labels));
  out.push(...annotationProblems(`${where}.annotations`, meta.annotations));
  return out;
}

function int32Problem(where: string, n: number | undefined, min: number): string[] {
  if (n === undefined) return [];
  return Number.isInteger(n) && n >= min && n <= INT32_MAX ? [] : [`${where} ${n} is not an int32 ≥ ${min}`];
}

function probeProblems(where: string, p: Probe | undefined): string[] {
  if (!p) return [];
  const port = p.tcpSocket?.port ?? p.httpGet?.port;
  return [
    ...int32Problem(`${where}.periodSeconds`, p.periodSeconds, 1),
    ...int32Problem(`${where}.failureThreshold`, p.failureThreshold, 1),
    ...int32Problem(`${where}.timeoutSeconds`, p.timeoutSeconds, 1),
    ...int32Problem(`${where}.initialDelaySeconds`, p.initialDelaySeconds, 0),
    ...(typeof port === 'number' && !(port >= 1 && port <= 65535) ? [`${where} port ${port}`] : []),
    // The API server asks only for a path (the kubelet puts the '/' in front of a relative one).
    ...(p.httpGet && !p.httpGet.path ? [`${where}.httpGet.path is empty`] : []),
  ];
}

function containerProblems(
  where: string,
  c: Container,
  volumeNames: Set<string>,
  clusterJudged: ReadonlySet<string>,
): string[] {
  const out: string[] = [];
  if (!isDnsLabel(c.name)) out.push(`${where}.name ${JSON.stringify(c.name)} is not a DNS-1123 label`);
  if (!c.image || c.image.trim() !== c.image) out.push(`${where}.image ${JSON.stringify(c.image)} is blank`);
  // A name twice is allowed (the last one wins, the API server only warns), as in CC's task arrays.
  for (const e of c.env ?? []) {
    if (!ENV_NAME.test(e.name) && !clusterJudged.has(e.name))
      out.push(`${where}.env name ${JSON.stringify(e.name)} is invalid`);
  }
  for (const p of c.ports ?? []) {
    if (!(Number.isInteger(p.containerPort) && p.containerPort >= 1 && p.containerPort <= 65535)) {
      out.push(`${where}.ports ${p.containerPort}`);
    }
  }
  const mountPaths = new Set<string>();
  for (const m of c.volumeMounts ?? []) {
    if (!volumeNames.has(m.name)) out.push(`${where}.volumeMounts ${m.name} names no volume`);
    if (!m.mountPath.startsWith('/') || m.mountPath.includes('\0'))
      out.push(`${where} mountPath ${m.mountPath}`);
    if (mountPaths.has(m.mountPath)) out.push(`${where}.volumeMounts ${JSON.stringify(m.mountPath)} twice`);
    mountPaths.add(m.mountPath);
  }
  out.push(...probeProblems(`${where}.startupProbe`, c.startupProbe));
  out.push(...probeProblems(`${where}.livenessProbe`, c.livenessProbe));
  out.push(...probeProblems(`${where}.readinessProbe`, c.readinessProbe));
  return out;
}

function podSpecProblems(where: string, spec: PodSpec, clusterJudged: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const volumeNames = new Set<string>();
  for (const v of spec.volumes ?? []) {
    if (!isDnsLabel(v.name))
      out.push(`${where}.volumes name ${JSON.stringify(v.name)} is not a DNS-1123 label`);
    if (volumeNames.has(v.name)) out.push(`${where}.volumes ${v.name} twice`);
    volumeNames.add(v.name);
    const claim = v.persistentVolumeClaim?.claimName;
    if (claim !== undefined && !isDnsSubdomain(claim))
      out.push(`${where}.volumes claim ${JSON.stringify(claim)}`);
  }
  const names = new Set<string>();
  spec.containers.forEach((c, i) => {
    if (names.has(c.name)) out.push(`${where}.containers ${c.name} twice`);
    names.add(c.name);
    out.push(...containerProblems(`${where}.containers[${i}]`, c, volumeNames, clusterJudged));
  });
  for (const s of spec.imagePullSecrets ?? []) {
    if (!isDnsSubdomain(s.name)) out.push(`${where}.imagePullSecrets ${JSON.stringify(s.name)}`);
  }
  for (const t of spec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []) {
    out.push(...selectorProblems(`${where}.affinity`, t.podAffinityTerm.labelSelector));
  }
  return out;
}

/**
 * A Deployment: its name is a DNS-1123 label (pods take it, plus a hash, as their name and
 * hostname), the selector matches the template's labels, replicas is an int32.
 */
export function deploymentProblems(
  d: Deployment,
  namespace: string,
  clusterJudged: ReadonlySet<string> = new Set(),
): string[] {
  const out = metaProblems('deployment.metadata', d.metadata, namespace, 'label');
  if (d.metadata.name.length > 63) out.push('deployment name longer than 63');
  if (!d.spec) return [...out, 'deployment without spec'];
  out.push(...int32Problem('deployment.spec.replicas', d.spec.replicas, 0));
  out.push(...selectorProblems('deployment.spec.selector', d.spec.selector));
  const tmplLabels = d.spec.template.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(d.spec.selector.matchLabels ?? {})) {
    if (tmplLabels[k] !== v) out.push(`deployment selector ${k}=${v} does not match the template`);
  }
  out.push(
    ...metaProblems('deployment.spec.template.metadata', d.spec.template.metadata ?? {}, undefined, 'none'),
  );
  if (!d.spec.template.spec) return [...out, 'deployment without pod spec'];
  out.push(...podSpecProblems('deployment.spec.template.spec', d.spec.template.spec, clusterJudged));
  return out;
}

/** A Job: its name becomes the pods' `job-name` label value, so it is a DNS-1123 label of ≤ 63. */
export function jobProblems(j: Job, namespace: string): string[] {
  const out = metaProblems('job.metadata', j.metadata, namespace, 'label');
  if (!j.spec) return [...out, 'job without spec'];
  out.push(...metaProblems('job.spec.template.metadata', j.spec.template.metadata ?? {}, undefined, 'none'));
  const pod = j.spec.template.spec;
  if (!pod) return [...out, 'job without pod spec'];
  out.push(...podSpecProblems('job.spec.template.spec', pod, new Set()));
  if (pod.restartPolicy !== 'Never') out.push('job restartPolicy is not Never');
  return out;
}

export function secretProblems(s: Secret, namespace: string): string[] {
  const out = metaProblems('secret.metadata', s.metadata, namespace, 'subdomain');
  for (const k of Object.keys(s.data ?? {})) {
    if (!/^[-._a-zA-Z0-9]+$/.test(k) || k.length > 253) out.push(`secret data key ${JSON.stringify(k)}`);
  }
  return out;
}

export function pdbProblems(p: PodDisruptionBudget, namespace: string): string[] {
  return [
    ...metaProblems('pdb.metadata', p.metadata, namespace, 'subdomain'),
    ...selectorProblems('pdb.spec.selector', p.spec?.selector),
  ];
}

/** A label selector string as the workers send it in list calls: `k=v` pairs of valid keys and values. */
export function selectorStringProblems(selector: string): string[] {
  const out: string[] = [];
  for (const term of selector.split(',')) {
    const [k = '', v, ...rest] = term.split('=');
    if (v === undefined || rest.length) out.push(`selector term ${JSON.stringify(term)}`);
    else {
      if (!isQualifiedName(k)) out.push(`selector key ${JSON.stringify(k)}`);
      if (!isLabelValue(v)) out.push(`selector value ${JSON.stringify(v)}`);
    }
  }
  return out;
}

/** Every object a worker makes for one desired LRP (Deployment, pull Secret, PDB) and the selector it lists by. */
export function lrpObjectProblems(lrp: DesiredLrp, namespace: string): string[] {
  // An app's own env var names are the cluster's to judge (decision 7): one it refuses is shown in
  // /instances (test/integration/scenarios/desire-refused.test.ts), so only the names we add are checked here.
  const appNames = new Set(Object.keys(lrp.environment));
  const out = deploymentProblems(lrpToDeployment(lrp, { runAsNonRoot: true }), namespace, appNames);
  const secret = registrySecret(lrp);
  if (secret) out.push(...secretProblems(secret, namespace));
  const pdb = pdbFor(lrp);
  if (pdb) out.push(...pdbProblems(pdb, namespace));
  out.push(...selectorStringProblems(lrpSelectorString(lrp.guid, lrp.version)));
  return out;
}

/** What a worker touches to stop an LRP: the selector it lists by and the pull Secret it deletes. */
export function stoppedProblems(rec: Extract<LrpRecord, { state: 'stopped' }>): string[] {
  const out = selectorStringProblems(lrpSelectorString(rec.guid, rec.version));
  if (rec.appName !== undefined) {
    const name = registrySecretName({
      appName: rec.appName,
      spaceName: rec.spaceName ?? '',
      processGuid: rec.processGuid,
    });
    if (!isDnsSubdomain(name)) out.push(`stopped secret name ${JSON.stringify(name)}`);
  }
  if (rec.namespace !== undefined && !isDnsLabel(rec.namespace))
    out.push(`stopped namespace ${rec.namespace}`);
  return out;
}

export function taskObjectProblems(task: DesiredTask, namespace: string): string[] {
  const out = jobProblems(taskToJob(task, { runAsNonRoot: true }), namespace);
  const secret = taskRegistrySecret(task);
  if (secret) out.push(...secretProblems(secret, namespace));
  out.push(...selectorStringProblems(taskSelectorString(task.taskGuid)));
  return out;
}

export function stagingObjectProblems(staging: DesiredStaging, namespace: string): string[] {
  const out = selectorStringProblems(stagingSelectorString(staging.stagingGuid));
  if (staging.lifecycle.type === 'buildpack') {
    const job = stagingToJob(staging, { runAsNonRoot: true, recipeImage: 'recipe.example/stager:1' });
    out.push(...jobProblems(job, namespace));
  }
  return out;
}
