/**
 * A converge the cluster refused for good (a 4xx answer other than a conflict: 422 Invalid, 403 quota or
 * forbidden, 404 namespace), carrying the generation of the record it converged to, so the worker can
 * store the refusal where /instances reads it (decision 7). Transient failures pass through unchanged.
 */
import { KubeApiError } from '@opi/kube';

export class DesireRefused extends Error {
  constructor(
    readonly processGuid: string,
    readonly generation: number,
    readonly refusal: KubeApiError & { status: number },
  ) {
    super(refusal.message);
    this.name = 'DesireRefused';
  }
}

/** The converge's failure as a DesireRefused when the cluster answered it for good, else as it came. */
export function asRefusal(err: unknown, processGuid: string, generation: number): unknown {
  if (!(err instanceof KubeApiError) || err.transient || err.status === undefined) return err;
  return new DesireRefused(processGuid, generation, err as KubeApiError & { status: number });
}
