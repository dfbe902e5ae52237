/**
 * The adapter's watches: the request (path, query, client deadline) and the kubeconfig's credentials,
 * applied afresh per stream. They bypass client-node's `Watch` and request path (see watch-stream.ts) and
 * take no concurrency slot, as they live for minutes; their connections come from the kept-alive agents.
 */
import { Agent as HttpAgent } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { type AgentReuser, invalidArgument } from './transport.js';
import type { WatchEvent, WatchHandle, WatchOptions, Watched, WatchedResource } from '../port/port.js';
import { openWatchStream } from './watch-stream.js';

/** A watch's client deadline beyond the server's timeoutSeconds, and without one (see WatchOptions). */
const WATCH_DEADLINE_GRACE_MS = 30_000;
const WATCH_DEFAULT_DEADLINE_MS = 30 * 60_000;

/** The collection path of each watched kind, by API group and version. */
const WATCH_PATHS: Record<WatchedResource, string> = {
  deployments: '/apis/apps/v1',
  statefulsets: '/apis/apps/v1',
  pods: '/api/v1',
  jobs: '/apis/batch/v1',
  events: '/api/v1',
};

export interface WatchConnection {
  kc: KubeConfig;
  agents: AgentReuser;
  /** When the stream ended: its HTTP status ('error' when it never opened), and how long it lasted. */
  onEnd(status: number | 'error', durationMs: number): void;
}

/** `KubernetesPort.watch` over a kubeconfig. */
export function openClientNodeWatch<R extends WatchedResource>(
  connection: WatchConnection,
  resource: R,
  namespace: string | undefined,
  options: WatchOptions,
  onEvent: (event: WatchEvent<Watched[R]>) => void,
): WatchHandle {
  const { kc, agents } = connection;
  const ctx = { verb: 'watch', resource, namespace } as const;
  const { timeoutSeconds } = options;
  const deadlineMs =
    options.deadlineMs ??
    (timeoutSeconds !== undefined
      ? timeoutSeconds * 1000 + WATCH_DEADLINE_GRACE_MS
      : WATCH_DEFAULT_DEADLINE_MS);
  const refuse = (message: string): WatchHandle => ({
    done: Promise.reject(invalidArgument(message, `watch ${resource}`)),
    stop: () => undefined,
  });
  if (timeoutSeconds !== undefined && !(Number.isInteger(timeoutSeconds) && timeoutSeconds >= 0)) {
    return refuse(`timeoutSeconds must be an integer ≥ 0, not ${timeoutSeconds}`);
  }
  if (!(deadlineMs > 0)) return refuse(`deadlineMs must be > 0, not ${deadlineMs}`);
  const query = new URLSearchParams({ watch: 'true' });
  if (options.labelSelector) query.set('labelSelector', options.labelSelector);
  if (options.fieldSelector) query.set('fieldSelector', options.fieldSelector);
  if (options.resourceVersion) query.set('resourceVersion', options.resourceVersion);
  if (options.allowWatchBookmarks) query.set('allowWatchBookmarks', 'true');
  if (timeoutSeconds !== undefined) query.set('timeoutSeconds', String(timeoutSeconds));
  const scope = namespace === undefined ? '' : `/namespaces/${encodeURIComponent(namespace)}`;
  const path = `${WATCH_PATHS[resource]}${scope}/${resource}?${query.toString()}`;
  return openWatchStream({
    context: ctx,
    deadlineMs,
    onEvent: onEvent as (event: unknown) => void,
    onEnd: (status, durationMs) => {
      connection.onEnd(status, durationMs);
    },
    prepare: async () => {
      const cluster = kc.getCurrentCluster();
      if (!cluster) throw new Error('the kubeconfig has no current cluster');
      // The kubeconfig's credentials as client-node applies them (token, client certificate, exec).
      const init = await kc.applyToFetchOptions({});
      const headers: Record<string, string> = {};
      const given = init.headers as { forEach?(f: (value: string, key: string) => void): void } | undefined;
      given?.forEach?.((value, key) => {
        headers[key] = value;
      });
      const agent = init.agent;
      return {
        url: new URL(`${cluster.server}${path}`),
        headers,
        agent: agent instanceof HttpAgent ? agents.reuse(agent) : undefined,
      };
    },
  });
}
