import { describe, expect, it } from '@jest/globals';
import {
  REFUSAL_MESSAGE_MAX,
  podsRefusalKind,
  podsRefusedMessage,
  refusalKind,
  refusalMessage,
} from './refusal.js';

const ENV_DETAIL =
  "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";
const envCause = (i: number, name: string) => ({
  field: `spec.template.spec.containers[0].env[${i}].name`,
  message: `Invalid value: ${JSON.stringify(name)}: ${ENV_DETAIL}`,
});

describe('refusalKind', () => {
  it.each<[number, string, string]>([
    [422, 'Deployment.apps "x" is invalid: ...', 'invalid'],
    [
      403,
      'deployments.apps "x" is forbidden: exceeded quota: q, requested: count/deployments.apps=1',
      'quota',
    ],
    [403, 'deployments.apps is forbidden: User "system:serviceaccount:x" cannot create', 'forbidden'],
    [404, 'namespaces "cf-workloads" not found', 'not_found'],
    [400, 'the body of the request was in an unknown format', 'bad_request'],
    [413, 'Request entity too large', 'other'],
  ])('%d %s is %s', (status, message, kind) => {
    expect(refusalKind({ status, message })).toBe(kind);
  });
});

describe('refusalMessage', () => {
  it('names a refused env var and what the cluster allows', () => {
    const message = `Deployment.apps "app-x" is invalid: ${envCause(0, 'MY VAR').field}: ${envCause(0, 'MY VAR').message}`;
    expect(refusalMessage({ status: 422, reason: 'Invalid', message, causes: [envCause(0, 'MY VAR')] })).toBe(
      `environment variable name "MY VAR" is not allowed by this cluster: ${ENV_DETAIL}`,
    );
  });

  it('names every refused env var, and only those causes', () => {
    const causes = [envCause(0, 'MY VAR'), { field: 'metadata.name', message: 'Invalid value: "X": no' }];
    const text = refusalMessage({
      status: 422,
      reason: 'Invalid',
      message: 'm',
      causes: [...causes, envCause(3, 'A=B')],
    });
    expect(text).toContain('"MY VAR" is not allowed');
    expect(text).toContain('; environment variable name "A=B" is not allowed');
    expect(text).not.toContain('metadata.name');
  });

  it("keeps any other refusal's own message, after what it was", () => {
    expect(
      refusalMessage({
        status: 422,
        reason: 'Invalid',
        message: 'Deployment.apps "x" is invalid: spec.template.spec.containers[0].image: Required value',
        causes: [{ field: 'spec.template.spec.containers[0].image', message: 'Required value' }],
      }),
    ).toBe(
      'Kubernetes refused the app (422 Invalid): Deployment.apps "x" is invalid: spec.template.spec.containers[0].image: Required value',
    );
    expect(
      refusalMessage({
        status: 403,
        reason: 'Forbidden',
        message:
          'secrets "x" is forbidden: exceeded quota: q, requested: count/secrets=1, used: count/secrets=5, limited: count/secrets=5',
      }),
    ).toMatch(/^Kubernetes refused the app \(over quota\): secrets "x" is forbidden: exceeded quota: q/);
  });

  it('is bounded', () => {
    const text = refusalMessage({ status: 422, reason: 'Invalid', message: 'x'.repeat(5000) });
    expect(text).toHaveLength(REFUSAL_MESSAGE_MAX);
    expect(text.endsWith('…')).toBe(true);
  });
});

describe('pods refused at admission (decision 12)', () => {
  it('words the API server message for the unclaimed instances, bounded, and counts a quota as quota', () => {
    const m =
      'pods "sts-1" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1';
    expect(podsRefusedMessage(m)).toBe(`Kubernetes could not create the app's instances: ${m}`);
    expect(podsRefusedMessage('x'.repeat(5000))).toHaveLength(REFUSAL_MESSAGE_MAX);
    expect(podsRefusalKind(m)).toBe('quota');
    expect(podsRefusalKind('pods "a" is forbidden: failed quota: compute: must specify requests.cpu')).toBe(
      'quota',
    );
    expect(podsRefusalKind('pods "a" is forbidden: violates PodSecurity "restricted:latest"')).toBe(
      'forbidden',
    );
  });
});
