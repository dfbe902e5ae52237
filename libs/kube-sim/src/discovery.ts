/** Discovery documents (/version, /api, /apis, /api/v1, /apis/<g>/<v>) built from the registry, as kubectl's RESTMapper and client-node's KubernetesObjectApi read them. */
import type { ResourceRegistry, ResourceType } from './resources.js';

const VERBS_COLLECTION = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** The Kubernetes minor version (1.x) the simulator plays unless told another: what /version says. */
export const DEFAULT_MINOR_VERSION = 30;

/** `/version` of a 1.`minor` server. */
export function serverVersion(minor: number) {
  return {
    major: '1',
    minor: String(minor),
    gitVersion: `v1.${minor}.0-kubesim`,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'go1.22.0',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}

export function apiVersions(address: string): object {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: address }],
  };
}

export function apiGroupList(registry: ResourceRegistry): object {
  const groups = [];
  for (const [name, versions] of registry.groups()) {
    if (!name) continue;
    const vs = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
    groups.push({ name, versions: vs, preferredVersion: vs[0] });
  }
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

export function apiGroup(registry: ResourceRegistry, group: string): object | undefined {
  const versions = registry.groups().get(group);
  if (!versions || !group) return undefined;
  const vs = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { kind: 'APIGroup', apiVersion: 'v1', name: group, versions: vs, preferredVersion: vs[0] };
}

function entry(t: ResourceType): object[] {
  const main: Record<string, unknown> = {
    name: t.plural,
    singularName: t.singular,
    namespaced: t.namespaced,
    kind: t.kind,
    verbs: VERBS_COLLECTION,
  };
  if (t.shortNames) main['shortNames'] = t.shortNames;
  if (t.categories) main['categories'] = t.categories;
  const out: object[] = [main];
  for (const sub of t.subresources) {
    switch (sub) {
      case 'status':
        out.push({
          name: `${t.plural}/status`,
          singularName: '',
          namespaced: t.namespaced,
          kind: t.kind,
          verbs: ['get', 'patch', 'update'],
        });
        break;
      case 'scale':
        out.push({
          name: `${t.plural}/scale`,
          singularName: '',
          namespaced: t.namespaced,
          group: 'autoscaling',
          version: 'v1',
          kind: 'Scale',
          verbs: ['get', 'patch', 'update'],
        });
        break;
      case 'log':
        out.push({
          name: `${t.plural}/log`,
          singularName: '',
          namespaced: true,
          kind: 'Pod',
          verbs: ['get'],
        });
        break;
      case 'eviction':
        out.push({
          name: `${t.plural}/eviction`,
          singularName: '',
          namespaced: true,
          group: 'policy',
          version: 'v1',
          kind: 'Eviction',
          verbs: ['create'],
        });
        break;
      case 'binding':
        out.push({
          name: `${t.plural}/binding`,
          singularName: '',
          namespaced: true,
          kind: 'Binding',
          verbs: ['create'],
        });
        break;
    }
  }
  return out;
}

export function apiResourceList(
  registry: ResourceRegistry,
  group: string,
  version: string,
): object | undefined {
  const types = registry.types.filter((t) => t.group === group && t.version === version);
  if (!types.length) return undefined;
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources: types.flatMap(entry),
  };
}
