/**
 * `meta.k8s.io/v1` Table answers, which kubectl asks for on `get`: the columns a real cluster prints for
 * the kinds we run, name and age for the rest.
 */
import type { ResourceType } from './resources.js';
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

export function age(fromIso: string | undefined, now: number): string {
  if (!fromIso) return '<unknown>';
  const s = Math.max(0, Math.floor((now - Date.parse(fromIso)) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

/** What `kubectl get pods` shows as STATUS. */
export function podStatusText(o: KubeObject): string {
  const status = rec(o['status']);
  if (o.metadata.deletionTimestamp) return 'Terminating';
  let reason = typeof status['reason'] === 'string' ? status['reason'] : text(status['phase'], 'Unknown');
  const statuses = Array.isArray(status['containerStatuses']) ? status['containerStatuses'] : [];
  for (const cs of statuses) {
    const state = rec(rec(cs)['state']);
    const waiting = rec(state['waiting']);
    const terminated = rec(state['terminated']);
    if (typeof waiting['reason'] === 'string' && waiting['reason']) reason = waiting['reason'];
    else if (typeof terminated['reason'] === 'string' && terminated['reason']) reason = terminated['reason'];
  }
  if (reason === 'Pending') {
    const conds = Array.isArray(status['conditions']) ? status['conditions'] : [];
    const scheduled = conds.map(rec).find((c) => c['type'] === 'PodScheduled');
    if (scheduled?.['status'] === 'True') reason = 'ContainerCreating';
  }
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

const COLUMNS: Record<string, Column[]> = {
  Pod: [
    nameCol,
    col('Ready', (o) => {
      const cs = Array.isArray(rec(o['status'])['containerStatuses'])
        ? (rec(o['status'])['containerStatuses'] as unknown[])
        : [];
      const total = Array.isArray(rec(o['spec'])['containers'])
        ? (rec(o['spec'])['containers'] as unknown[]).length
        : 0;
      return `${cs.filter((c) => rec(c)['ready'] === true).length}/${total}`;
    }),
    col('Status', podStatusText),
    col(
      'Restarts',
      (o) => {
        const cs = rec(o['status'])['containerStatuses'];
        return Array.isArray(cs) ? cs.reduce((n: number, c) => n + num(rec(c)['restartCount']), 0) : 0;
      },
      'integer',
    ),
    ageCol,
  ],
  Deployment: [
    nameCol,
    col('Ready', (o) => `${num(rec(o['status'])['readyReplicas'])}/${num(rec(o['spec'])['replicas'])}`),
    col('Up-to-date', (o) => num(rec(o['status'])['updatedReplicas']), 'integer'),
    col('Available', (o) => num(rec(o['status'])['availableReplicas']), 'integer'),
    ageCol,
  ],
  ReplicaSet: [
    nameCol,
    col('Desired', (o) => num(rec(o['spec'])['replicas']), 'integer'),
    col('Current', (o) => num(rec(o['status'])['replicas']), 'integer'),
    col('Ready', (o) => num(rec(o['status'])['readyReplicas']), 'integer'),
    ageCol,
  ],
  StatefulSet: [
    nameCol,
    col('Ready', (o) => `${num(rec(o['status'])['readyReplicas'])}/${num(rec(o['spec'])['replicas'])}`),
    ageCol,
  ],
  Job: [
    nameCol,
    col('Completions', (o) => `${num(rec(o['status'])['succeeded'])}/${num(rec(o['spec'])['completions'])}`),
    ageCol,
  ],
  Namespace: [nameCol, col('Status', (o) => text(rec(o['status'])['phase'], '')), ageCol],
  Service: [
    nameCol,
    col('Type', (o) => text(rec(o['spec'])['type'], '')),
    col('Cluster-IP', (o) => text(rec(o['spec'])['clusterIP'], '')),
    col('Port(s)', (o) => {
      const ports = rec(o['spec'])['ports'];
      return Array.isArray(ports)
        ? ports.map((p) => `${num(rec(p)['port'])}/${text(rec(p)['protocol'], 'TCP')}`).join(',')
        : '';
    }),
    ageCol,
  ],
  Event: [
    col('Last Seen', (o, now) =>
      age(typeof o['lastTimestamp'] === 'string' ? o['lastTimestamp'] : o.metadata.creationTimestamp, now),
    ),
    col('Type', (o) => text(o['type'], '')),
    col('Reason', (o) => text(o['reason'], '')),
    col(
      'Object',
      (o) =>
        `${text(rec(o['involvedObject'])['kind'], '').toLowerCase()}/${text(rec(o['involvedObject'])['name'], '')}`,
    ),
    col('Message', (o) => text(o['message'], '')),
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
