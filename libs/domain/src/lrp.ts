/**
 * A desired long-running process (LRP) as the service records it: CC's desire request, validated and
 * normalised. The record is the source of truth the workers converge the cluster to; jobs carry only
 * the process guid and read the latest record, so any order of delivery ends in the last request's state.
 */

export type HealthCheckType = 'port' | 'http' | 'process' | 'none';

export interface RegistryCredentials {
  /** Registry host the credentials are for (from the image reference; docker.io by default). */
  server: string;
  username: string;
  password: string;
}

export interface VolumeMount {
  /** A PersistentVolumeClaim name in the LRP's namespace. */
  claimName: string;
  mountPath: string;
}

/** One of CC's HTTP routes to the process (`hostname` may end in a /path); port is the app's. */
export interface Route {
  hostname: string;
  port?: number;
}

/** An application security group rule as CC sends it (Diego's SecurityGroupRule). */
export interface EgressRule {
  protocol: string;
  destinations: string[];
  ports?: number[];
  portRange?: { start: number; end: number };
  icmpInfo?: { type: number; code: number };
  log: boolean;
  annotations?: string[];
}

/** The CF app a workload runs for, and its space and org: labels, annotations and log tags carry them. */
export interface AppIdentity {
  appGuid: string;
  appName: string;
  spaceGuid: string;
  spaceName: string;
  orgGuid: string;
  orgName: string;
}

export interface DesiredLrp extends AppIdentity {
  /** `<guid>-<version>`, the LRP's identity. */
  processGuid: string;
  guid: string;
  version: string;
  processType: string;
  /** Kubernetes namespace, resolved (the request's or the server's default). */
  namespace: string;
  ports: number[];
  environment: Record<string, string>;
  instances: number;
  /** CC's `last_updated`, echoed byte for byte as the scheduling info's `annotation`. */
  annotation: string;
  healthCheck: { type: HealthCheckType; httpEndpoint: string; timeoutMs: number };
  startTimeoutMs: number;
  memoryMb: number;
  diskMb: number;
  cpuWeight: number;
  volumeMounts: VolumeMount[];
  image: string;
  command: string[];
  registry?: RegistryCredentials;
  /** CC's user-defined annotations (e.g. prometheus.io/*), put on the pods. */
  userAnnotations: Record<string, string>;
  /**
   * What CC sends and the service keeps without acting on it yet: routing belongs to the platform's
   * router, egress rules to a network policy, placement tags to isolation segments. Recorded in Redis and
   * on the workload's annotations (never in the pod template), so a rebuild after a Redis loss gets them
   * back; an update replaces the routes, a desire all three. Absent in records written before they were
   * kept.
   */
  routes?: Route[];
  egressRules?: EgressRule[];
  placementTags?: string[];
}

/** What the desired-state store keeps per LRP: the spec, or a tombstone once CC stopped it. */
export type LrpRecord =
  | { state: 'desired'; lrp: DesiredLrp; generation: number }
  | {
      state: 'stopped';
      processGuid: string;
      guid: string;
      version: string;
      namespace?: string;
      /** The last desired names, so the stop can find objects named after them (the pull secret). */
      appName?: string;
      spaceName?: string;
      /** CC's `last_updated` of the last desire: GET /apps shows it while the workload is still present. */
      annotation?: string;
      generation: number;
    };

export function processGuidOf(guid: string, version: string): string {
  return `${guid}-${version}`;
}

/** What an LRP runs as: the configured kind for a new LRP; an existing one keeps the kind it has. */
export const WORKLOAD_KINDS = ['deployment', 'statefulset'] as const;
export type WorkloadKind = (typeof WORKLOAD_KINDS)[number];

/** Diego's instance states, which CC understands. */
export type InstanceState = 'UNCLAIMED' | 'CLAIMED' | 'RUNNING' | 'CRASHED' | 'UNKNOWN';

export interface InstanceInfo {
  index: number;
  /** Unix nanoseconds of the instance's start, 0 when unknown. */
  sinceNs: bigint;
  state: InstanceState;
  placementError?: string;
  podName: string;
}
