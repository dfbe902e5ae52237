/**
 * Per-kind defaulting and validation, as the apiserver's registry strategies do them: defaults make the
 * stored objects look like a real cluster's (so code tested here meets the same shapes there), and
 * validation answers 422 with causes for what our own code could get wrong.
 */
import { fieldCause, type StatusCause } from './errors.js';
import type { ResourceType } from './resources.js';
import { matchesLabelSelector } from './selectors.js';
import { type KubeObject, isRecord } from './types.js';
import { DEFAULT_MINOR_VERSION } from './discovery.js';
import { invalidCause, isDns1123Label, isEnvVarName, validateObjectMeta } from './validation.js';

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | undefined {
  return isRecord(v) ? v : undefined;
}
function ensure(parent: Obj, key: string): Obj {
  const cur = parent[key];
  if (isRecord(cur)) return cur;
  const made: Obj = {};
  parent[key] = made;
  return made;
}
function setDefault(o: Obj, key: string, value: unknown): void {
  if (o[key] === undefined || o[key] === null) o[key] = value;
}

function imagePullPolicy(image: unknown): string {
  if (typeof image !== 'string') return 'IfNotPresent';
  const lastPart = image.split('/').pop() ?? image;
  if (image.includes('@')) return 'IfNotPresent';
  if (!lastPart.includes(':') || lastPart.endsWith(':latest')) return 'Always';
  return 'IfNotPresent';
}

function defaultContainers(list: unknown): void {
  if (!Array.isArray(list)) return;
  for (const c of list) {
    if (!isRecord(c)) continue;
    setDefault(c, 'terminationMessagePath', '/dev/termination-log');
    setDefault(c, 'terminationMessagePolicy', 'File');
    setDefault(c, 'imagePullPolicy', imagePullPolicy(c['image']));
    setDefault(c, 'resources', {});
    if (Array.isArray(c['ports'])) {
      for (const p of c['ports']) if (isRecord(p)) setDefault(p, 'protocol', 'TCP');
    }
  }
}

export function defaultPodSpec(spec: Obj): void {
  setDefault(spec, 'restartPolicy', 'Always');
  setDefault(spec, 'terminationGracePeriodSeconds', 30);
  setDefault(spec, 'dnsPolicy', 'ClusterFirst');
  setDefault(spec, 'schedulerName', 'default-scheduler');
  setDefault(spec, 'securityContext', {});
  defaultContainers(spec['containers']);
  defaultContainers(spec['initContainers']);
}

function defaultTemplate(spec: Obj): void {
  const template = ensure(spec, 'template');
  ensure(template, 'metadata');
  defaultPodSpec(ensure(template, 'spec'));
}

/** Cluster IPs come from 10.96.0.0/16, as in a kubeadm cluster. */
let nextServiceIp = 10;

/** Fills the defaults a real apiserver fills on create (and, for templates, on update). */
export function applyDefaults(type: ResourceType, o: KubeObject, isCreate: boolean): void {
  const spec = obj(o['spec']);
  switch (type.kind) {
    case 'Pod': {
      if (spec) {
        defaultPodSpec(spec);
        // Admission (ServiceAccount, Priority) fills these on pods only, not on templates.
        setDefault(spec, 'enableServiceLinks', true);
        setDefault(spec, 'serviceAccountName', 'default');
        setDefault(spec, 'serviceAccount', spec['serviceAccountName']);
        setDefault(spec, 'priority', 0);
      }
      if (isCreate) {
        const status = ensure(o, 'status');
        setDefault(status, 'phase', 'Pending');
        setDefault(status, 'qosClass', spec ? qosClass(spec) : 'BestEffort');
      }
      break;
    }
    case 'Deployment': {
      if (!spec) break;
      setDefault(spec, 'replicas', 1);
      {
        // Defaulted field by field, as upstream: kubectl create sends `strategy: {}`.
        const strategy = ensure(spec, 'strategy');
        setDefault(strategy, 'type', 'RollingUpdate');
        if (strategy['type'] === 'RollingUpdate') {
          const ru = ensure(strategy, 'rollingUpdate');
          setDefault(ru, 'maxSurge', '25%');
          setDefault(ru, 'maxUnavailable', '25%');
        }
      }
      setDefault(spec, 'revisionHistoryLimit', 10);
      setDefault(spec, 'progressDeadlineSeconds', 600);
      defaultTemplate(spec);
      break;
    }
    case 'ReplicaSet': {
      if (!spec) break;
      setDefault(spec, 'replicas', 1);
      defaultTemplate(spec);
      break;
    }
    case 'StatefulSet': {
      if (!spec) break;
      setDefault(spec, 'replicas', 1);
      setDefault(spec, 'podManagementPolicy', 'OrderedReady');
      setDefault(spec, 'updateStrategy', { type: 'RollingUpdate', rollingUpdate: { partition: 0 } });
      setDefault(spec, 'revisionHistoryLimit', 10);
      defaultTemplate(spec);
      break;
    }
    case 'Job': {
      if (!spec) break;
      setDefault(spec, 'completions', 1);
      setDefault(spec, 'parallelism', 1);
      setDefault(spec, 'backoffLimit', 6);
      setDefault(spec, 'completionMode', 'NonIndexed');
      setDefault(spec, 'suspend', false);
      if (isCreate && spec['manualSelector'] !== true) {
        // The Job controller's generated selector and labels, keyed by the Job's uid.
        const uid = o.metadata.uid;
        const generated = {
          'batch.kubernetes.io/controller-uid': uid,
          'batch.kubernetes.io/job-name': o.metadata.name,
          'controller-uid': uid,
          'job-name': o.metadata.name,
        };
        spec['selector'] = { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
        const tmeta = ensure(ensure(spec, 'template'), 'metadata');
        tmeta['labels'] = { ...(obj(tmeta['labels']) ?? {}), ...generated };
      }
      defaultTemplate(spec);
      break;
    }
    case 'Secret': {
      setDefault(o, 'type', 'Opaque');
      const stringData = obj(o['stringData']);
      if (stringData) {
        // stringData is write-only: merged into data and never stored.
        const data = ensure(o, 'data');
        for (const [k, v] of Object.entries(stringData)) data[k] = Buffer.from(String(v)).toString('base64');
        delete o['stringData'];
      }
      break;
    }
    case 'Service': {
      if (!spec) break;
      setDefault(spec, 'type', 'ClusterIP');
      setDefault(spec, 'sessionAffinity', 'None');
      if (isCreate && spec['clusterIP'] === undefined) {
        const n = nextServiceIp++;
        spec['clusterIP'] = `10.96.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
        spec['clusterIPs'] = [spec['clusterIP']];
      }
      if (Array.isArray(spec['ports'])) {
        for (const p of spec['ports']) {
          if (!isRecord(p)) continue;
          setDefault(p, 'protocol', 'TCP');
          setDefault(p, 'targetPort', p['port']);
        }
      }
      if (isCreate) setDefault(o, 'status', { loadBalancer: {} });
      break;
    }
    case 'Namespace': {
      o.metadata.labels = { ...(o.metadata.labels ?? {}), 'kubernetes.io/metadata.name': o.metadata.name };
      const nsSpec = ensure(o, 'spec');
      setDefault(nsSpec, 'finalizers', ['kubernetes']);
      if (isCreate) o['status'] = { phase: 'Active' };
      break;
    }
    default:
      break;
  }
}

function qosClass(spec: Obj): string {
  const containers = Array.isArray(spec['containers']) ? spec['containers'] : [];
  let any = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const res = isRecord(c) ? obj(c['resources']) : undefined;
    const req = obj(res?.['requests']) ?? {};
    const lim = obj(res?.['limits']) ?? {};
    if (Object.keys(req).length || Object.keys(lim).length) any = true;
    for (const r of ['cpu', 'memory']) {
      if (lim[r] === undefined || (req[r] !== undefined && req[r] !== lim[r])) guaranteed = false;
    }
  }
  if (guaranteed) return 'Guaranteed';
  return any ? 'Burstable' : 'BestEffort';
}

/** A container's `env`: every entry named, as 1.`minor` allows names (isEnvVarName). */
function validateEnv(env: unknown, field: string, causes: StatusCause[], minor: number): void {
  if (!Array.isArray(env)) return;
  env.forEach((e, i) => {
    const name = isRecord(e) ? e['name'] : undefined;
    const f = `${field}[${i}].name`;
    if (typeof name !== 'string' || name === '') {
      causes.push(fieldCause('FieldValueRequired', f, 'Required value'));
      return;
    }
    for (const m of isEnvVarName(name, minor)) causes.push(invalidCause(f, name, m));
  });
}

function validateContainers(list: unknown, field: string, causes: StatusCause[], minor: number): void {
  if (!Array.isArray(list) || list.length === 0) {
    causes.push(fieldCause('FieldValueRequired', field, 'Required value'));
    return;
  }
  const seen = new Set<string>();
  list.forEach((c, i) => {
    const f = `${field}[${i}]`;
    if (!isRecord(c)) {
      causes.push(fieldCause('FieldValueInvalid', f, 'Invalid value: must be an object'));
      return;
    }
    const name = c['name'];
    if (typeof name !== 'string' || name === '') {
      causes.push(fieldCause('FieldValueRequired', `${f}.name`, 'Required value'));
    } else {
      for (const m of isDns1123Label(name))
        causes.push(fieldCause('FieldValueInvalid', `${f}.name`, `Invalid value: "${name}": ${m}`));
      if (seen.has(name))
        causes.push(fieldCause('FieldValueDuplicate', `${f}.name`, `Duplicate value: "${name}"`));
      seen.add(name);
    }
    if (typeof c['image'] !== 'string' || c['image'].trim() === '') {
      causes.push(fieldCause('FieldValueRequired', `${f}.image`, 'Required value'));
    }
    validateEnv(c['env'], `${f}.env`, causes, minor);
  });
}

function validatePodSpec(
  spec: unknown,
  field: string,
  causes: StatusCause[],
  allowedRestart: string[],
  minor: number,
): void {
  if (!isRecord(spec)) {
    causes.push(fieldCause('FieldValueRequired', field, 'Required value'));
    return;
  }
  validateContainers(spec['containers'], `${field}.containers`, causes, minor);
  const rp = spec['restartPolicy'];
  if (typeof rp === 'string' && !allowedRestart.includes(rp)) {
    causes.push(
      fieldCause(
        'FieldValueNotSupported',
        `${field}.restartPolicy`,
        `Unsupported value: "${rp}": supported values: ${allowedRestart.map((x) => `"${x}"`).join(', ')}`,
      ),
    );
  }
}

function validateSelectorAndTemplate(
  spec: Obj,
  causes: StatusCause[],
  restart: string[],
  minor: number,
): void {
  const selector = obj(spec['selector']);
  if (
    !selector ||
    (Object.keys(obj(selector['matchLabels']) ?? {}).length === 0 &&
      !Array.isArray(selector['matchExpressions']))
  ) {
    causes.push(fieldCause('FieldValueRequired', 'spec.selector', 'Required value'));
  }
  const template = obj(spec['template']);
  const labels = obj(obj(template?.['metadata'])?.['labels']) as Record<string, string> | undefined;
  if (selector && !matchesLabelSelector(labels ?? {}, selector)) {
    causes.push(
      fieldCause(
        'FieldValueInvalid',
        'spec.template.metadata.labels',
        'Invalid value: `selector` does not match template `labels`',
      ),
    );
  }
  validatePodSpec(template?.['spec'], 'spec.template.spec', causes, restart, minor);
  const replicas = spec['replicas'];
  if (
    replicas !== undefined &&
    (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0)
  ) {
    causes.push(
      fieldCause('FieldValueInvalid', 'spec.replicas', 'Invalid value: must be greater than or equal to 0'),
    );
  }
}

/**
 * Returns the 422 causes for an object about to be stored (old is set on update), as the API server of
 * Kubernetes 1.`minor` finds them.
 */
export function validateObject(
  type: ResourceType,
  o: KubeObject,
  old?: KubeObject,
  minor = DEFAULT_MINOR_VERSION,
): StatusCause[] {
  const causes = validateObjectMeta(o.metadata, type.nameRule);
  const spec = obj(o['spec']);
  switch (type.kind) {
    case 'Pod':
      validatePodSpec(spec, 'spec', causes, ['Always', 'OnFailure', 'Never'], minor);
      break;
    case 'Deployment':
    case 'ReplicaSet':
    case 'StatefulSet':
      if (!spec) causes.push(fieldCause('FieldValueRequired', 'spec', 'Required value'));
      else validateSelectorAndTemplate(spec, causes, ['Always'], minor);
      if (
        old &&
        spec &&
        JSON.stringify(obj(old['spec'])?.['selector']) !== JSON.stringify(spec['selector'])
      ) {
        causes.push(fieldCause('FieldValueInvalid', 'spec.selector', 'Invalid value: field is immutable'));
      }
      break;
    case 'Job':
      if (!spec) causes.push(fieldCause('FieldValueRequired', 'spec', 'Required value'));
      else {
        validateSelectorAndTemplate(spec, causes, ['OnFailure', 'Never'], minor);
        if (old && JSON.stringify(obj(old['spec'])?.['template']) !== JSON.stringify(spec['template'])) {
          causes.push(fieldCause('FieldValueInvalid', 'spec.template', 'Invalid value: field is immutable'));
        }
      }
      break;
    case 'Secret': {
      const data = obj(o['data']) ?? {};
      let size = 0;
      for (const v of Object.values(data)) size += typeof v === 'string' ? (v.length * 3) / 4 : 0;
      if (size > 1024 * 1024)
        causes.push(fieldCause('FieldValueTooLong', 'data', 'Too long: must have at most 1048576 bytes'));
      if (old && old['immutable'] === true && JSON.stringify(old['data']) !== JSON.stringify(o['data'])) {
        causes.push(
          fieldCause('FieldValueForbidden', 'data', 'Forbidden: field is immutable when `immutable` is set'),
        );
      }
      break;
    }
    default:
      break;
  }
  return causes;
}
