/**
 * `meta.k8s.io/v1` Table answers, which kubectl asks for on `get`: the columns a real cluster prints for
 * the kinds we run, name and age for the rest.
 */
import type { ResourceType } from './resources.js';
import { labelSelectorToString } from './selectors.js';
import { type KubeObject, isRecord } from './types.js';

interface Column {
  name: string;
  type: string;
  format?: string;
  description: string;
  priority: number;
  cell: (o: KubeObject, now: number) => string | number;
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}
function rec(v: unknown): Record<string, unknown> {
  return isRecord(v) ? v : {};
}
/** Text of a scalar field; anything else (absent, object) prints as the fallback. */
function text(v: unknown, fallback = ''): string {
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : fallback;
}

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** apimachinery's `duration.HumanDuration`, which the server's printers use for AGE, LAST SEEN, DURATION. */
export function humanDuration(ms: number): string {
  const secs = Math.floor(ms / 1000);
  if (secs < -1) return '<invalid>';
  const s = Math.max(0, secs);
  const pair = (a: number, ua: string, b: number, ub: string): string =>
    b ? `${a}${ua}${b}${ub}` : `${a}${ua}`;
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return pair(m, 'm', s % 60, 's');
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return pair(h, 'h', m % 60, 'm');
  if (h < 48) return `${h}h`;
  if (h < 24 * 8) return pair(Math.floor(h / 24), 'd', h % 24, 'h');
  if (h < 24 * 365 * 2) return `${Math.floor(h / 24)}d`;
  if (h < 24 * 365 * 8) return pair(Math.floor(h / 24 / 365), 'y', Math.floor(h / 24) % 365, 'd');
  return `${Math.floor(h / 24 / 365)}y`;
}

export function age(fromIso: unknown, now: number): string {
  if (typeof fromIso !== 'string' || !fromIso) return '<unknown>';
  return humanDuration(now - Date.parse(fromIso));
}

/** What `kubectl get pods` shows as STATUS (the apiserver's printPod). */
export function podStatusText(o: KubeObject): string {
  const status = rec(o['status']);
  const spec = rec(o['spec']);
  let reason =
    typeof status['reason'] === 'string' && status['reason'] ? status['reason'] : text(status['phase']);
  let initializing = false;
  const inits = arr(status['initContainerStatuses']).map(rec);
  for (const [i, cs] of inits.entries()) {
    const state = rec(cs['state']);
    const terminated = isRecord(state['terminated']) ? state['terminated'] : undefined;
    const waiting = rec(state['waiting']);
    if (terminated && num(terminated['exitCode']) === 0) continue;
    initializing = true;
    if (terminated) {
      const r = text(terminated['reason']);
      reason = r
        ? `Init:${r}`
        : num(terminated['signal'])
          ? `Init:Signal:${num(terminated['signal'])}`
          : `Init:ExitCode:${num(terminated['exitCode'])}`;
    } else if (text(waiting['reason']) && waiting['reason'] !== 'PodInitializing') {
      reason = `Init:${text(waiting['reason'])}`;
    } else {
      reason = `Init:${i}/${arr(spec['initContainers']).length}`;
    }
    break;
  }
  if (!initializing) {
    let hasRunning = false;
    for (const cs of arr(status['containerStatuses']).map(rec).reverse()) {
      const state = rec(cs['state']);
      const terminated = isRecord(state['terminated']) ? state['terminated'] : undefined;
      if (text(rec(state['waiting'])['reason'])) reason = text(rec(state['waiting'])['reason']);
      else if (terminated && text(terminated['reason'])) reason = text(terminated['reason']);
      else if (terminated)
        reason = num(terminated['signal'])
          ? `Signal:${num(terminated['signal'])}`
          : `ExitCode:${num(terminated['exitCode'])}`;
      else if (cs['ready'] === true && isRecord(state['running'])) hasRunning = true;
    }
    if (reason === 'Completed' && hasRunning) {
      const ready = arr(status['conditions'])
        .map(rec)
        .some((c) => c['type'] === 'Ready' && c['status'] === 'True');
      reason = ready ? 'Running' : 'NotReady';
    }
    // A real kubelet reports ContainerCreating as the containers' waiting reason once the pod is bound.
    if (reason === 'Pending') {
      const scheduled = arr(status['conditions'])
        .map(rec)
        .find((c) => c['type'] === 'PodScheduled');
      if (scheduled?.['status'] === 'True') reason = 'ContainerCreating';
    }
  }
  if (o.metadata.deletionTimestamp) reason = status['reason'] === 'NodeLost' ? 'Unknown' : 'Terminating';
  return reason;
}

const nameCol: Column = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  priority: 0,
  cell: (o) => o.metadata.name,
};
const ageCol: Column = {
  name: 'Age',
  type: 'string',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  priority: 0,
  cell: (o, now) => age(o.metadata.creationTimestamp, now),
};
function col(name: string, cell: Column['cell'], type = 'string'): Column {
  return { name, type, description: name, priority: 0, cell };
}
/** A column kubectl shows only with `-o wide` (the server always fills it). */
function wide(name: string, cell: Column['cell'], type = 'string'): Column {
  return { name, type, description: name, priority: 1, cell };
}

function templateContainers(o: KubeObject): Record<string, unknown>[] {
  return arr(rec(rec(rec(o['spec'])['template'])['spec'])['containers']).map(rec);
}
const containersCol = wide('Containers', (o) =>
  templateContainers(o)
    .map((c) => text(c['name']))
    .join(','),
);
const imagesCol = wide('Images', (o) =>
  templateContainers(o)
    .map((c) => text(c['image']))
    .join(','),
);
/** `metav1.FormatLabelSelector`: `<none>` when empty (Deployments print the bare selector string). */
function selectorCol(none: string): Column {
  return wide('Selector', (o) => {
    const sel = rec(o['spec'])['selector'];
    return (isRecord(sel) ? labelSelectorToString(sel) : '') || none;
  });
}
/** `labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty. */
function formatLabels(m: unknown): string {
  const pairs = Object.entries(rec(m))
    .map(([k, v]) => `${k}=${text(v)}`)
    .sort();
  return pairs.length ? pairs.join(',') : '<none>';
}
const count = (v: unknown): number => (isRecord(v) ? Object.keys(v).length : arr(v).length);

function serviceExternalIp(o: KubeObject): string {
  const spec = rec(o['spec']);
  const external = arr(spec['externalIPs']).map((x) => text(x));
  switch (spec['type']) {
    case 'ExternalName':
      return text(spec['externalName']);
    case 'LoadBalancer': {
      const ingress = arr(rec(rec(rec(o['status'])['loadBalancer']))['ingress'])
        .map(rec)
        .map((i) => text(i['ip']) || text(i['hostname']))
        .filter(Boolean);
      const all = [...ingress, ...external];
      return all.length ? all.join(',') : '<pending>';
    }
    default:
      return external.length ? external.join(',') : '<none>';
  }
}

function nodeRoles(o: KubeObject): string {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(rec(o.metadata.labels))) {
    if (k.startsWith('node-role.kubernetes.io/') && k.length > 'node-role.kubernetes.io/'.length) {
      roles.add(k.slice('node-role.kubernetes.io/'.length));
    } else if (k === 'kubernetes.io/role' && text(v)) roles.add(text(v));
  }
  return roles.size ? [...roles].sort().join(',') : '<none>';
}
function nodeAddress(o: KubeObject, type: string): string {
  const a = arr(rec(o['status'])['addresses'])
    .map(rec)
    .find((x) => x['type'] === type);
  return a ? text(a['address']) : '<none>';
}
const nodeInfo = (o: KubeObject, key: string): string =>
  text(rec(rec(o['status'])['nodeInfo'])[key]) || '<unknown>';

function eventFirstSeen(o: KubeObject, now: number): string {
  return age(o['firstTimestamp'] ?? o['eventTime'], now);
}

/** Columns and cells as the v1.20 apiserver's printers (pkg/printers/internalversion) make them. */
const COLUMNS: Record<string, Column[]> = {
  Pod: [
    nameCol,
    col('Ready', (o) => {
      const ready = arr(rec(o['status'])['containerStatuses'])
        .map(rec)
        .filter((c) => c['ready'] === true && isRecord(rec(c['state'])['running'])).length;
      return `${ready}/${arr(rec(o['spec'])['containers']).length}`;
    }),
    col('Status', podStatusText),
    col(
      'Restarts',
      (o) =>
        arr(rec(o['status'])['containerStatuses']).reduce(
          (n: number, c) => n + num(rec(c)['restartCount']),
          0,
        ),
      'integer',
    ),
    ageCol,
    wide('IP', (o) => {
      const status = rec(o['status']);
      return text(rec(arr(status['podIPs'])[0])['ip']) || text(status['podIP']) || '<none>';
    }),
    wide('Node', (o) => text(rec(o['spec'])['nodeName']) || '<none>'),
    wide('Nominated Node', (o) => text(rec(o['status'])['nominatedNodeName']) || '<none>'),
    wide('Readiness Gates', (o) => {
      const gates = arr(rec(o['spec'])['readinessGates']).map(rec);
      if (!gates.length) return '<none>';
      const conds = arr(rec(o['status'])['conditions']).map(rec);
      const ok = gates.filter((g) =>
        conds.some((c) => c['type'] === g['conditionType'] && c['status'] === 'True'),
      ).length;
      return `${ok}/${gates.length}`;
    }),
  ],
  Deployment: [
    nameCol,
    col('Ready', (o) => `${num(rec(o['status'])['readyReplicas'])}/${num(rec(o['spec'])['replicas'])}`),
    col('Up-to-date', (o) => num(rec(o['status'])['updatedReplicas'])),
    col('Available', (o) => num(rec(o['status'])['availableReplicas'])),
    ageCol,
    containersCol,
    imagesCol,
    selectorCol(''),
  ],
  ReplicaSet: [
    nameCol,
    col('Desired', (o) => num(rec(o['spec'])['replicas']), 'integer'),
    col('Current', (o) => num(rec(o['status'])['replicas']), 'integer'),
    col('Ready', (o) => num(rec(o['status'])['readyReplicas']), 'integer'),
    ageCol,
    containersCol,
    imagesCol,
    selectorCol('<none>'),
  ],
  StatefulSet: [
    nameCol,
    col('Ready', (o) => `${num(rec(o['status'])['readyReplicas'])}/${num(rec(o['spec'])['replicas'])}`),
    ageCol,
    containersCol,
    imagesCol,
  ],
  Job: [
    nameCol,
    col('Completions', (o) => {
      const spec = rec(o['spec']);
      const succeeded = num(rec(o['status'])['succeeded']);
      if (typeof spec['completions'] === 'number') return `${succeeded}/${spec['completions']}`;
      const parallelism = num(spec['parallelism']);
      return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
    }),
    col('Duration', (o, now) => {
      const status = rec(o['status']);
      if (typeof status['startTime'] !== 'string') return '';
      const end = typeof status['completionTime'] === 'string' ? Date.parse(status['completionTime']) : now;
      return humanDuration(end - Date.parse(status['startTime']));
    }),
    ageCol,
    containersCol,
    imagesCol,
    selectorCol('<none>'),
  ],
  Namespace: [nameCol, col('Status', (o) => text(rec(o['status'])['phase'])), ageCol],
  Node: [
    nameCol,
    col('Status', (o) => {
      const ready = arr(rec(o['status'])['conditions'])
        .map(rec)
        .find((c) => c['type'] === 'Ready');
      const status = [ready ? (ready['status'] === 'True' ? 'Ready' : 'NotReady') : 'Unknown'];
      if (rec(o['spec'])['unschedulable'] === true) status.push('SchedulingDisabled');
      return status.join(',');
    }),
    col('Roles', nodeRoles),
    ageCol,
    col('Version', (o) => text(rec(rec(o['status'])['nodeInfo'])['kubeletVersion'])),
    wide('Internal-IP', (o) => nodeAddress(o, 'InternalIP')),
    wide('External-IP', (o) => nodeAddress(o, 'ExternalIP')),
    wide('OS-Image', (o) => nodeInfo(o, 'osImage')),
    wide('Kernel-Version', (o) => nodeInfo(o, 'kernelVersion')),
    wide('Container-Runtime', (o) => nodeInfo(o, 'containerRuntimeVersion')),
  ],
  Service: [
    nameCol,
    col('Type', (o) => text(rec(o['spec'])['type'])),
    col('Cluster-IP', (o) => text(rec(o['spec'])['clusterIP']) || '<none>'),
    col('External-IP', serviceExternalIp),
    col('Port(s)', (o) => {
      const ports = arr(rec(o['spec'])['ports']).map(rec);
      if (!ports.length) return '<none>';
      return ports
        .map((p) => {
          const node = num(p['nodePort']) ? `:${num(p['nodePort'])}` : '';
          return `${num(p['port'])}${node}/${text(p['protocol'], 'TCP')}`;
        })
        .join(',');
    }),
    ageCol,
    wide('Selector', (o) => formatLabels(rec(o['spec'])['selector'])),
  ],
  ConfigMap: [nameCol, col('Data', (o) => count(o['data']) + count(o['binaryData'])), ageCol],
  Secret: [nameCol, col('Type', (o) => text(o['type'])), col('Data', (o) => count(o['data'])), ageCol],
  ServiceAccount: [nameCol, col('Secrets', (o) => count(o['secrets'])), ageCol],
  Lease: [nameCol, col('Holder', (o) => text(rec(o['spec'])['holderIdentity'])), ageCol],
  Event: [
    col('Last Seen', (o, now) => {
      const series = rec(o['series']);
      if (typeof series['lastObservedTime'] === 'string') return age(series['lastObservedTime'], now);
      return typeof o['lastTimestamp'] === 'string' ? age(o['lastTimestamp'], now) : eventFirstSeen(o, now);
    }),
    col('Type', (o) => text(o['type'])),
    col('Reason', (o) => text(o['reason'])),
    col('Object', (o) => {
      const io = rec(o['involvedObject']);
      const kind = text(io['kind']).toLowerCase();
      return text(io['name']) ? `${kind}/${text(io['name'])}` : kind;
    }),
    wide('Subobject', (o) => text(rec(o['involvedObject'])['fieldPath'])),
    wide('Source', (o) => {
      const source = rec(o['source']);
      const component = text(source['component']) || text(o['reportingComponent']);
      const host = text(source['host']) || text(o['reportingInstance']);
      return host ? `${component}, ${host}` : component;
    }),
    col('Message', (o) => text(o['message']).trim()),
    wide('First Seen', eventFirstSeen),
    wide('Count', (o) => {
      const series = rec(o['series']);
      if (isRecord(o['series'])) return num(series['count']) + 1;
      return num(o['count']) || 1;
    }),
    { ...wide('Name', (o) => o.metadata.name), format: 'name' },
  ],
};

export function wantsTable(accept: string | undefined): boolean {
  return accept !== undefined && accept.includes('as=Table');
}

export function toTable(
  resource: ResourceType,
  items: KubeObject[],
  now: number,
  listMeta: Record<string, unknown> = {},
): object {
  const cols = COLUMNS[resource.kind] ?? [nameCol, ageCol];
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    columnDefinitions: cols.map(({ name, type, format, description, priority }) => ({
      name,
      type,
      format: format ?? '',
      description,
      priority,
    })),
    rows: items.map((o) => ({
      cells: cols.map((c) => c.cell(o, now)),
      object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
    })),
  };
}
