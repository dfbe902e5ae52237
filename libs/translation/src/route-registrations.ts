/**
 * What gorouter is told over NATS for an LRP's routed instances, as Diego's route-emitter tells it: one
 * `router.register` per (Ready instance, route port) with that port's hostnames, and the changes between
 * two such sets. gorouter decodes a message into Go types and drops the whole message on any type error
 * (ports uint16, index a string, tags strings), so every field here is built to those types.
 */
import type { DesiredLrp, Route } from '@opi/domain';
import { workloadMeta } from './deployment.js';
import type { Deployment, ObjectMeta, StatefulSet } from '@opi/kube-objects';
import { routesFromAnnotations } from './kept-annotations.js';
import {
  ANNOTATION_APP_NAME,
  ANNOTATION_ORG_NAME,
  ANNOTATION_SPACE_NAME,
  LABEL_APP_GUID,
  LABEL_GUID,
  LABEL_ORG_GUID,
  LABEL_PROCESS_TYPE,
  LABEL_SPACE_GUID,
} from './labels.js';

/** An LRP's routes and what its registrations name, read off its workload. */
export interface RouteSource {
  /** Port → its hostnames (CC's `hostname`: `host`, `host/path` or `*.domain`), as CC sent them. */
  ports: [number, string[]][];
  /** The workload's desired replicas: the shown indexes are judged against it. */
  desired: number;
  /** The tags every registration of the LRP carries; the instance's own are added per message. */
  tags: Readonly<Record<string, string>>;
  /** The app guid: gorouter's `app` (X-CF-ApplicationID, RTR log lines in `cf logs`). */
  app: string;
}

/** One Ready instance, as the cache holds it. */
export interface RoutedInstance {
  ip: string;
  uid: string;
  /** The index /instances shows. */
  index: number;
}

/** gorouter's RegistryMessage, the fields we send (mbus/subscriber.go). */
export interface RegistryMessage {
  host: string;
  port: number;
  uris: string[];
  app: string;
  private_instance_id: string;
  private_instance_index: string;
  tags: Record<string, string>;
}

/**
 * Registrations of one LRP: `ip:port` (gorouter's endpoint identity) → the message as it is published
 * (JSON). Held as text: as objects, 10,000 instances × 2 ports held 32 MB; as the text sent, a third.
 */
export type Registrations = Map<string, string>;

/** What to publish to go from one LRP's registrations to the next. */
export interface RegistrationChanges {
  /** Endpoints gone, or hostnames an endpoint no longer has (uris: only those), as JSON. */
  unregister: string[];
  /** Endpoints new or changed (a register of a known `host:port` updates it in gorouter), as JSON. */
  register: string[];
}

/** CC's port for a process that declares none. */
const DEFAULT_PORT = 8080;
const isPort = (n: number): boolean => Number.isInteger(n) && n >= 1 && n <= 65535;

/**
 * The routing of a workload with routes; undefined for one without (or whose routes annotation cannot
 * be read: too large, kept in Redis only).
 */
export function routeSourceOf(w: Deployment | StatefulSet): RouteSource | undefined {
  const routes = routesFromAnnotations(w.metadata.annotations);
  return routes && sourceOf(routes, firstPortOf(w), w.metadata, w.spec?.replicas ?? 1);
}

/**
 * The routing of a desired LRP, as its workload will carry it: what a job that has the record but not the
 * workload at hand sends (stop-instance's unregister before its DELETE).
 */
export function routeSourceOfLrp(lrp: DesiredLrp): RouteSource | undefined {
  return lrp.routes && sourceOf(lrp.routes, lrp.ports[0] ?? DEFAULT_PORT, workloadMeta(lrp), lrp.instances);
}

function sourceOf(
  routes: readonly Route[],
  firstPort: number,
  meta: Pick<ObjectMeta, 'labels' | 'annotations'>,
  desired: number,
): RouteSource | undefined {
  if (routes.length === 0) return undefined;
  const labels = meta.labels ?? {};
  const annotations = meta.annotations ?? {};
  const app = labels[LABEL_APP_GUID] ?? '';
  return {
    ports: portsOf(routes, firstPort),
    desired,
    app,
    tags: {
      component: 'route-emitter',
      source_id: app,
      app_id: app,
      app_name: annotations[ANNOTATION_APP_NAME] ?? '',
      process_id: labels[LABEL_GUID] ?? '',
      process_type: labels[LABEL_PROCESS_TYPE] ?? '',
      organization_id: labels[LABEL_ORG_GUID] ?? '',
      organization_name: annotations[ANNOTATION_ORG_NAME] ?? '',
      space_id: labels[LABEL_SPACE_GUID] ?? '',
      space_name: annotations[ANNOTATION_SPACE_NAME] ?? '',
    },
  };
}

/** The app's first port, else 8080: CC's own choice for a route that names none (routing_info.rb). */
function firstPortOf(w: Deployment | StatefulSet): number {
  return w.spec?.template.spec?.containers[0]?.ports?.[0]?.containerPort ?? DEFAULT_PORT;
}

/** Hostnames grouped by port, each once, ports that gorouter cannot hold left out. */
function portsOf(routes: readonly Route[], fallbackPort: number): [number, string[]][] {
  const byPort = new Map<number, string[]>();
  for (const { hostname, port = fallbackPort } of routes) {
    if (!isPort(port) || hostname === '') continue;
    const list = byPort.get(port) ?? [];
    if (!list.includes(hostname)) list.push(hostname);
    byPort.set(port, list);
  }
  return [...byPort];
}

/** Whether two sources register the same messages (an update that changed nothing routing reads). */
export function sameRouteSource(a: RouteSource | undefined, b: RouteSource | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Every registration of an LRP's Ready instances. */
export function registrationsOf(source: RouteSource, instances: readonly RoutedInstance[]): Registrations {
  const out: Registrations = new Map();
  for (const i of instances) {
    if (!i.ip) continue;
    for (const [port, uris] of source.ports) {
      const m: RegistryMessage = {
        host: i.ip,
        port,
        uris,
        app: source.app,
        private_instance_id: i.uid,
        private_instance_index: String(i.index),
        tags: { ...source.tags, process_instance_id: i.uid, instance_id: String(i.index) },
      };
      out.set(`${i.ip}:${port}`, JSON.stringify(m));
    }
  }
  return out;
}

/**
 * Unregisters first (an address a gone pod held may come back as another pod's), each naming only the
 * hostnames that endpoint lost; then registers of what is new or changed.
 */
export function registrationChanges(before: Registrations, after: Registrations): RegistrationChanges {
  const unregister: string[] = [];
  const register: string[] = [];
  for (const [key, was] of before) {
    const now = after.get(key);
    if (now === was) continue;
    if (now === undefined) {
      unregister.push(was);
      continue;
    }
    const old = JSON.parse(was) as RegistryMessage;
    const kept = (JSON.parse(now) as RegistryMessage).uris;
    const lost = old.uris.filter((u) => !kept.includes(u));
    if (lost.length > 0) unregister.push(JSON.stringify({ ...old, uris: lost }));
  }
  for (const [key, now] of after) if (before.get(key) !== now) register.push(now);
  return { unregister, register };
}
