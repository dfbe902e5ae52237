/**
 * A container the kubelet killed for a failed startup or liveness probe, put in Diego's words. Diego's
 * executor says `Instance never healthy after <start timeout>: <check output>` for a check that never
 * passed and `Instance became unhealthy: <check output>` for one that failed later (executor
 * depot/steps/health_check_step.go), the output being CF's healthcheck's (`Failed to make TCP connection
 * to port 8080: connection refused`, `Failed to make HTTP request to '/health' on port 8080: received
 * status code 500`; healthcheck.go before 2022, the wording of CC's era). The pod's status does not say a
 * probe killed it; its Events do: kubelet's `Killing` (`Container app failed startup probe, will be
 * restarted`, kuberuntime_manager.go) after `Unhealthy` ones (`Startup probe failed: dial tcp
 * 10.0.0.5:8080: connect: connection refused`, prober.go).
 */
import { DIEGO_REASON_MAX, boundText } from '@opi/domain';
import type { ContainerStateTerminated, CoreEvent, Pod, Probe } from '@opi/kube-objects';
import { oneLine } from './diego-words.js';
import { unixSeconds } from './time.js';

type ProbeKind = 'startup' | 'liveness';

/** Exit codes of a container stopped by a signal the kubelet sends (SIGKILL, SIGTERM). */
const SIGNAL_EXITS: ReadonlySet<number> = new Set([137, 143]);

/** Whether a termination may be a probe kill, so that the pod's Events are worth reading. */
export function mayBeProbeKill(terminated: Pick<ContainerStateTerminated, 'exitCode' | 'reason'>): boolean {
  return SIGNAL_EXITS.has(terminated.exitCode) && terminated.reason !== 'OOMKilled';
}

/** Go's time.Duration String for whole seconds, as Diego prints the start timeout: `2s`, `1m0s`, `1h0m0s`. */
export function goDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  if (h > 0) return `${h}h${m}m${rest}s`;
  if (m > 0) return `${m}m${rest}s`;
  return `${rest}s`;
}

function eventSeconds(e: CoreEvent): number | undefined {
  return unixSeconds(e.lastTimestamp) ?? unixSeconds(e.eventTime);
}

/** The probe the latest Killing event of the container names, when it names one in the run that ended. */
function killingProbe(
  events: readonly CoreEvent[],
  container: string,
  terminated: ContainerStateTerminated,
): { kind: ProbeKind; at: number } | undefined {
  const started = unixSeconds(terminated.startedAt) ?? 0;
  const finished = unixSeconds(terminated.finishedAt) ?? Number.MAX_SAFE_INTEGER;
  let found: { kind: ProbeKind; at: number } | undefined;
  for (const e of events) {
    if (e.reason !== 'Killing') continue;
    const m = /^Container (\S+) failed (startup|liveness) probe\b/.exec(e.message ?? '');
    if (!m || m[1] !== container) continue;
    const at = eventSeconds(e);
    // The kill comes before the exit it causes; a grace period later at most, so allow its 30 s default.
    if (at === undefined || at < started || at > finished + 30) continue;
    if (!found || at >= found.at) found = { kind: m[2] as ProbeKind, at };
  }
  return found;
}

/** The latest `<Kind> probe failed: <output>` at or before the kill. */
function probeOutput(events: readonly CoreEvent[], kind: ProbeKind, killedAt: number): string | undefined {
  const prefix = `${kind === 'startup' ? 'Startup' : 'Liveness'} probe failed: `;
  let best: { at: number; output: string } | undefined;
  for (const e of events) {
    if (e.reason !== 'Unhealthy' || !e.message?.startsWith(prefix)) continue;
    const at = eventSeconds(e) ?? 0;
    if (at > killedAt) continue;
    if (!best || at >= best.at) best = { at, output: oneLine(e.message.slice(prefix.length)) };
  }
  return best?.output;
}

function seconds(probe: Probe): string {
  return `${(probe.timeoutSeconds ?? 1).toFixed(2)} seconds`;
}

/**
 * The kubelet's probe output in the healthcheck's words where the two say the same thing (connection
 * refused, a timeout, an HTTP status); anything else is kept as the kubelet said it.
 */
export function healthcheckWords(probe: Probe, output: string): string {
  const refused = /connect: connection refused/.test(output);
  const timedOut = /i\/o timeout|deadline exceeded|Client\.Timeout exceeded/.test(output);
  if (probe.httpGet) {
    const where = `Failed to make HTTP request to '${probe.httpGet.path ?? '/'}' on port ${String(probe.httpGet.port)}`;
    const status = /^HTTP probe failed with statuscode: (\d+)$/.exec(output);
    if (status) return `${where}: received status code ${status[1]}`;
    if (refused) return `${where}: connection refused`;
    if (timedOut) return `${where}: timed out after ${seconds(probe)}`;
    return `${where}: ${output}`;
  }
  if (probe.tcpSocket) {
    const where = `Failed to make TCP connection to port ${String(probe.tcpSocket.port)}`;
    if (refused) return `${where}: connection refused`;
    if (timedOut) return `${where}: timed out after ${seconds(probe)}`;
    return `${where}: ${output}`;
  }
  return output;
}

/**
 * Diego's words for a probe kill of the pod's `container`, from the pod's Events, or undefined when the
 * Events do not show one for the run that ended with `terminated` (then the exit's words stand).
 */
export function describeProbeKill(
  source: string | undefined,
  pod: Pod,
  container: string,
  terminated: ContainerStateTerminated,
  events: readonly CoreEvent[],
): string | undefined {
  if (!mayBeProbeKill(terminated)) return undefined;
  const ofPod = events.filter((e) => !pod.metadata.uid || e.involvedObject.uid === pod.metadata.uid);
  const kill = killingProbe(ofPod, container, terminated);
  if (!kill) return undefined;
  const spec = pod.spec?.containers.find((c) => c.name === container);
  const probe = kill.kind === 'startup' ? spec?.startupProbe : spec?.livenessProbe;
  const output = probeOutput(ofPod, kill.kind, kill.at);
  const check = probe && output !== undefined ? healthcheckWords(probe, output) : output;
  const words =
    kill.kind === 'startup'
      ? `Instance never healthy after ${goDuration((probe?.failureThreshold ?? 3) * (probe?.periodSeconds ?? 10))}`
      : 'Instance became unhealthy';
  const said = check ? `${words}: ${check}` : words;
  return boundText(source ? `${source}: ${said}` : said, DIEGO_REASON_MAX);
}
