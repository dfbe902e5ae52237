/**
 * The watch scenario's baselines, what any watcher or lister of the same objects gets: a bare watch
 * of pods and Jobs for the freshness figures, and a bare paged list (bare-list.ts) for the first list.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ClientNodeKubernetes, type WatchEvent, type WatchHandle, loadKubeConfig } from '@opi/kube';
import { log, repo } from './common.js';
import { WORKER_NODE_ARGS } from './service.js';

/** What the bare watch reads of an object. */
export type AnyObject = {
  metadata: { name: string; resourceVersion?: string };
  status?: Record<string, unknown>;
};

/**
 * The baseline of every freshness figure: a bare watch (the adapter's, as the reflectors use) of pods
 * and Jobs in the namespace, through a proxy as the workers' are; `expect` resolves when an event that
 * `match` accepts arrives (performance.now()), or NaN after `timeoutMs`.
 */
export class BareWatch {
  private readonly waiters = new Set<{
    match: (o: AnyObject, type: string) => boolean;
    done(at: number): void;
  }>();
  private readonly handles = new Map<string, WatchHandle>();
  private closed = false;

  private constructor(
    private readonly kube: ClientNodeKubernetes,
    private readonly namespace: string,
  ) {}

  static async start(kubeconfigYaml: string, namespace: string): Promise<BareWatch> {
    const kube = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigYaml }));
    // The collection's current version from a list that matches nothing: the watch starts from now.
    const { resourceVersion } = await kube.pods.list(namespace, 'bench-matches=nothing');
    const w = new BareWatch(kube, namespace);
    w.open('pods', resourceVersion);
    w.open('jobs', resourceVersion);
    return w;
  }

  private open(resource: 'pods' | 'jobs', from: string): void {
    let last = from;
    const onEvent = (e: WatchEvent<unknown>): void => {
      const at = performance.now();
      if (e.type === 'ERROR') return;
      const o = e.object as AnyObject;
      if (o.metadata.resourceVersion) last = o.metadata.resourceVersion;
      if (e.type === 'BOOKMARK') return;
      for (const w of this.waiters) {
        if (w.match(o, e.type)) {
          this.waiters.delete(w);
          w.done(at);
        }
      }
    };
    const handle = this.kube.watch(
      resource,
      this.namespace,
      { resourceVersion: from, timeoutSeconds: 3600, allowWatchBookmarks: true },
      onEvent,
    );
    this.handles.set(resource, handle);
    // Re-opened from the last version seen should the server end it.
    handle.done
      .catch((err: unknown) => {
        log(`bare watch of ${resource} ended: ${err instanceof Error ? err.message : String(err)}`);
      })
      .finally(() => {
        if (!this.closed) this.open(resource, last);
      });
  }

  expect(match: (o: AnyObject, type: string) => boolean, timeoutMs: number): Promise<number> {
    return new Promise((resolve) => {
      const w = {
        match,
        done: (at: number) => {
          clearTimeout(timer);
          resolve(at);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        resolve(NaN);
      }, timeoutMs);
      this.waiters.add(w);
    });
  }

  close(): void {
    this.closed = true;
    for (const h of this.handles.values()) h.stop();
    this.kube.close();
  }
}

/** The bare list (bare-list.ts) in a process of its own, with the worker's Node flags. */
export async function bareList(kubeconfig: string, namespace: string): Promise<number> {
  const proc = spawn(process.execPath, [...WORKER_NODE_ARGS, join(repo, 'bench/dist/bare-list.js')], {
    env: { PATH: process.env['PATH'] ?? '', KUBECONFIG: kubeconfig, BENCH_NAMESPACE: namespace },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  for await (const line of createInterface({ input: proc.stdout })) {
    const r = JSON.parse(line) as { ms: number; deployments: number; pods: number };
    log(`bare paged list: ${r.deployments} Deployments, ${r.pods} pods in ${Math.round(r.ms)} ms`);
    return r.ms;
  }
  throw new Error(`bare-list exited with ${String(proc.exitCode ?? proc.signalCode)}`);
}
