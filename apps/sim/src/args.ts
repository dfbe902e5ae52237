/** Command line of `npm run sim`, parsed with node:util (no extra dependency for a handful of flags). */
import { parseArgs } from 'node:util';
import { parsePodRange } from '@opi/kube-sim';

export interface SimArgs {
  port: number;
  host: string;
  advertiseHost: string | undefined;
  kubeconfig: string | undefined;
  token: string | undefined;
  seed: number | undefined;
  fast: boolean;
  /** kube-controller-manager feature gates the simulated controllers follow. */
  featureGates: { MaxUnavailableStatefulSet?: boolean };
  namespaces: string[];
  /** The Kubernetes version played (`1.<minor>`); undefined: the simulator's default. */
  kubernetesVersion: string | undefined;
  /** `127.R.0.0/16` for the pod IPs; undefined: KUBESIM_POD_RANGE, else a free range. */
  podRange: string | undefined;
  /** Running containers answer HTTP on their ports (off with --no-serve-pods). */
  servePods: boolean;
  help: boolean;
}

export const USAGE = `Usage: npm run sim -- [options]

Starts a simulated Kubernetes cluster (API server, scheduler, kubelet, controllers) on loopback.

  --port <n>          port to listen on; 0 picks a free one (default 0)
  --host <addr>       address to bind (default 127.0.0.1)
  --advertise-host <h> host the kubeconfig names, when clients use another name than --host
                      (e.g. a compose service name; default: --host, 127.0.0.1 for 0.0.0.0)
  --kubeconfig <file> write a kubeconfig for kubectl and client-node to this file
  --token <t>         bearer token clients must send (default: random)
  --namespace <ns>    create this namespace at start (repeatable)
  --seed <n>          seed of the random choices (names, jitter, faults)
  --fast              pods start in milliseconds instead of about a second
  --feature-gates <g> e.g. MaxUnavailableStatefulSet=true: StatefulSet rollouts as from Kubernetes 1.35,
                      where crash-looping old pods are never replaced (kubernetes#137409)
  --kubernetes-version <v> the version to play, e.g. 1.34 (default 1.30): /version, and validation
                      that changed between versions (env var names: any printable ASCII but '='
                      from 1.32)
  --pod-range <cidr>  the loopback range pod IPs come from, 127.R.0.0/16 (R 1..255; default:
                      env KUBESIM_POD_RANGE, else a free one); start fails if another simulator holds it
  --no-serve-pods     pods get IPs but do not answer HTTP on their container ports
  --help              this text
`;

export function parseSimArgs(argv: string[]): SimArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      'advertise-host': { type: 'string' },
      kubeconfig: { type: 'string' },
      token: { type: 'string' },
      seed: { type: 'string' },
      namespace: { type: 'string', multiple: true },
      fast: { type: 'boolean', default: false },
      'feature-gates': { type: 'string', default: '' },
      'kubernetes-version': { type: 'string' },
      'pod-range': { type: 'string' },
      'no-serve-pods': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port must be 0..65535, got ${values.port}`);
  const seed = values.seed === undefined ? undefined : Number(values.seed);
  if (seed !== undefined && !Number.isInteger(seed))
    throw new Error(`--seed must be an integer, got ${values.seed}`);
  const podRange = values['pod-range'];
  if (podRange !== undefined) {
    try {
      parsePodRange(podRange);
    } catch (e) {
      throw new Error(`--pod-range: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
  }
  const featureGates: SimArgs['featureGates'] = {};
  for (const item of values['feature-gates'].split(',').filter((x) => x.trim() !== '')) {
    const m = /^\s*(\w+)=(true|false)\s*$/.exec(item);
    if (m?.[1] !== 'MaxUnavailableStatefulSet')
      throw new Error(`--feature-gates knows MaxUnavailableStatefulSet=true|false, got ${item}`);
    featureGates.MaxUnavailableStatefulSet = m[2] === 'true';
  }
  return {
    featureGates,
    port,
    host: values.host,
    advertiseHost: values['advertise-host'],
    kubeconfig: values.kubeconfig,
    token: values.token,
    seed,
    fast: values.fast,
    namespaces: values.namespace ?? [],
    kubernetesVersion: values['kubernetes-version'],
    podRange,
    servePods: !values['no-serve-pods'],
    help: values.help,
  };
}
