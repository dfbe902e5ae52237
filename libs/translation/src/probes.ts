/** Kubernetes probes from CC's health check. */
import type { DesiredLrp } from '@opi/domain';
import type { Container, Probe } from '@opi/kube-objects';

const STARTUP_PERIOD_S = 2;
const DEFAULT_START_TIMEOUT_MS = 60_000;
/** Probe counts are int32 in the API; a larger one makes the whole Deployment invalid. */
const INT32_MAX = 2 ** 31 - 1;

/**
 * CC's start timeout (health_check_timeout_ms, else start_timeout_ms, else 60 s) as startup probe
 * failures at a 2 s period, so the app gets at least the whole timeout to come up. The contract bounds
 * neither timeout, so the count is capped at int32 (about 136 years at 2 s).
 */
export function startupFailureThreshold(lrp: Pick<DesiredLrp, 'healthCheck' | 'startTimeoutMs'>): number {
  const timeoutMs =
    lrp.healthCheck.timeoutMs > 0
      ? lrp.healthCheck.timeoutMs
      : lrp.startTimeoutMs > 0
        ? lrp.startTimeoutMs
        : DEFAULT_START_TIMEOUT_MS;
  return Math.min(INT32_MAX, Math.max(1, Math.ceil(timeoutMs / 1000 / STARTUP_PERIOD_S)));
}

/** The check itself, on the first port; none for `process`/`none` (and for a port check without a port). */
function check(lrp: DesiredLrp): Probe | undefined {
  const port = lrp.ports[0];
  if (port === undefined) return undefined;
  switch (lrp.healthCheck.type) {
    case 'port':
      return { tcpSocket: { port } };
    case 'http':
      return { httpGet: { path: lrp.healthCheck.httpEndpoint || '/', port } };
    case 'process':
    case 'none':
      return undefined;
  }
}

/**
 * A startup probe that allows the start timeout, then liveness (restart after 3 failures, 30 s) and
 * readiness (out of rotation on the first failure) with the same check. This matches CF's start-timeout
 * semantics better than a long initial delay, which would also delay the first readiness of a fast app.
 */
export function probesFor(
  lrp: DesiredLrp,
): Pick<Container, 'startupProbe' | 'livenessProbe' | 'readinessProbe'> {
  // A fresh check per probe: the three must not share nested objects a caller might modify.
  const probe = (periodSeconds: number, failureThreshold: number): Probe | undefined => {
    const c = check(lrp);
    return c && { ...c, periodSeconds, failureThreshold };
  };
  const startupProbe = probe(STARTUP_PERIOD_S, startupFailureThreshold(lrp));
  const livenessProbe = probe(10, 3);
  const readinessProbe = probe(5, 1);
  return startupProbe && livenessProbe && readinessProbe
    ? { startupProbe, livenessProbe, readinessProbe }
    : {};
}
