/**
 * A desire the cluster refused for good, in the words CC shows: `/instances` answers it as every desired
 * instance's `placement_error` (decision 7), and the metric counts it by `refusalKind`. Pure: it reads
 * the Kubernetes answer (its status, reason, message and field causes), never the cluster.
 */

/** What a refusal is counted as (`opi_desire_refused_total{reason}`): a small, fixed set. */
export const REFUSAL_KINDS = ['invalid', 'quota', 'forbidden', 'not_found', 'bad_request', 'other'] as const;
export type RefusalKind = (typeof REFUSAL_KINDS)[number];

/** The part of a Kubernetes answer a refusal is worded from. */
export interface KubeRefusal {
  status: number;
  reason: string;
  message: string;
  causes?: readonly { field?: string | undefined; message: string }[] | undefined;
}

/** Longer reasons are cut here: a Status message lists every cause, and CC shows this in `cf app`. */
export const REFUSAL_MESSAGE_MAX = 1000;

/** An env var's name, as the API server's field path names it. */
const ENV_NAME_FIELD = /\.env\[\d+\]\.name$/;
/** The value a `field.Invalid` cause quotes, and what it says of it. */
const INVALID_VALUE = /^Invalid value: ("(?:[^"\\]|\\.)*"): ([\s\S]*)$/;

export function refusalKind(r: Pick<KubeRefusal, 'status' | 'message'>): RefusalKind {
  switch (r.status) {
    case 422:
      return 'invalid';
    case 403:
      return /exceeded quota/.test(r.message) ? 'quota' : 'forbidden';
    case 404:
      return 'not_found';
    case 400:
      return 'bad_request';
    default:
      return 'other';
  }
}

/** An env var name cause as the user reads it: the variable first, then what the cluster allows. */
function envNameCause(c: { field?: string | undefined; message: string }): string | undefined {
  if (!c.field || !ENV_NAME_FIELD.test(c.field)) return undefined;
  const m = INVALID_VALUE.exec(c.message);
  if (!m?.[1] || m[2] === undefined) return undefined;
  return `environment variable name ${m[1]} is not allowed by this cluster: ${m[2]}`;
}

function bounded(text: string): string {
  return text.length <= REFUSAL_MESSAGE_MAX ? text : `${text.slice(0, REFUSAL_MESSAGE_MAX - 1)}…`;
}

/**
 * The refusal as `placement_error`: an env var name the cluster refuses names the variable and the
 * cluster's rule; anything else is the API server's own message after what kind of refusal it was.
 */
export function refusalMessage(r: KubeRefusal): string {
  const envNames = (r.causes ?? []).map(envNameCause).filter((x): x is string => x !== undefined);
  if (envNames.length > 0) return bounded(envNames.join('; '));
  const kind = refusalKind(r);
  const what = kind === 'quota' ? 'over quota' : `${r.status} ${r.reason}`;
  return bounded(`Kubernetes refused the app (${what}): ${r.message}`);
}

/**
 * Pods of an accepted workload that the cluster refuses at their admission (a ResourceQuota, decision 12),
 * as the desired instances without a pod show it: the API server's message after what happened.
 */
export function podsRefusedMessage(apiServerMessage: string): string {
  return bounded(`Kubernetes could not create the app's instances: ${apiServerMessage}`);
}

/** What a refusal of pods is counted as: a quota's (exceeded, or a request it needs missing), or forbidden. */
export function podsRefusalKind(apiServerMessage: string): RefusalKind {
  return /(exceeded|failed) quota/.test(apiServerMessage) ? 'quota' : 'forbidden';
}
