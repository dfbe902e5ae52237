/**
 * Kubernetes `Status` failures, shaped as apimachinery's `pkg/api/errors` builds them, so that clients
 * (client-node's ApiException, kubectl) see exactly what a real apiserver sends.
 */

export interface StatusCause {
  reason?: string;
  type?: string;
  message: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message: string;
  reason: string;
  details?: StatusDetails;
  code: number;
}

export class StatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
    this.name = 'StatusError';
  }

  toStatus(): StatusBody {
    const body: StatusBody = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) body.details = this.details;
    return body;
  }
}

/** `deployments.apps` for grouped resources, `pods` for the core group. */
export function qualifiedResource(plural: string, group: string): string {
  return group ? `${plural}.${group}` : plural;
}

export const errors = {
  notFound: (plural: string, group: string, name: string) =>
    new StatusError(404, 'NotFound', `${qualifiedResource(plural, group)} "${name}" not found`, {
      name,
      group,
      kind: plural,
    }),
  alreadyExists: (plural: string, group: string, name: string) =>
    new StatusError(409, 'AlreadyExists', `${qualifiedResource(plural, group)} "${name}" already exists`, {
      name,
      group,
      kind: plural,
    }),
  conflict: (
    plural: string,
    group: string,
    name: string,
    why = 'the object has been modified; please apply your changes to the latest version and try again',
  ) =>
    new StatusError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${qualifiedResource(plural, group)} "${name}": ${why}`,
      { name, group, kind: plural },
    ),
  /** 422; `kind` is the Kind (e.g. `Deployment`), as apimachinery's NewInvalid does. */
  invalid: (kind: string, group: string, name: string, causes: StatusCause[]) =>
    new StatusError(
      422,
      'Invalid',
      `${group ? `${kind}.${group}` : kind} "${name}" is invalid: ${causes
        .map((c) => (c.field ? `${c.field}: ${c.message}` : c.message))
        .join(', ')}`,
      { name, group, kind, causes },
    ),
  badRequest: (message: string) => new StatusError(400, 'BadRequest', message),
  methodNotAllowed: (message: string) => new StatusError(405, 'MethodNotAllowed', message),
  unsupportedMediaType: (contentType: string) =>
    new StatusError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got ${contentType})`,
    ),
  expired: (message: string) => new StatusError(410, 'Expired', message),
  unauthorized: () => new StatusError(401, 'Unauthorized', 'Unauthorized'),
  forbidden: (message: string) => new StatusError(403, 'Forbidden', message),
  tooManyRequests: (retryAfterSeconds: number) =>
    new StatusError(
      429,
      'TooManyRequests',
      'the server has received too many requests and has asked us to try again later',
      {
        retryAfterSeconds,
      },
    ),
  internal: (message: string) => new StatusError(500, 'InternalError', `Internal error occurred: ${message}`),
  unavailable: (message: string) => new StatusError(503, 'ServiceUnavailable', message),
};

/** A 422 cause for a field. */
export function fieldCause(
  reason:
    | 'FieldValueRequired'
    | 'FieldValueInvalid'
    | 'FieldValueNotSupported'
    | 'FieldValueTooLong'
    | 'FieldValueForbidden'
    | 'FieldValueDuplicate',
  field: string,
  message: string,
): StatusCause {
  return { reason, field, message };
}
