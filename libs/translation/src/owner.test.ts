import { describe, expect, it } from '@jest/globals';
import type { Deployment, OwnerReference, Secret } from './k8s-objects.js';
import { ownedBy } from './owner.js';

const deployment: Deployment = { metadata: { name: 'app-dev-0123456789', uid: 'uid-1', namespace: 'ns' } };
const ours: OwnerReference = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  name: 'app-dev-0123456789',
  uid: 'uid-1',
  controller: true,
  blockOwnerDeletion: true,
};
const other: OwnerReference = { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'uid-9' };
const oldController: OwnerReference = { ...ours, name: 'old', uid: 'uid-0' };

describe('ownedBy', () => {
  it.each<[string, OwnerReference[] | undefined, OwnerReference[]]>([
    ['no owners yet', undefined, [ours]],
    ['already owned by it (no duplicate)', [ours], [ours]],
    ['another, non-controller owner is kept', [other], [other, ours]],
    ['a previous controller is replaced', [oldController, other], [other, ours]],
  ])('%s', (_what, ownerReferences, expected) => {
    const secret: Secret = {
      metadata: { name: 's', ...(ownerReferences ? { ownerReferences } : {}) },
      data: {},
    };
    const owned = ownedBy(secret, deployment);
    expect(owned.metadata.ownerReferences).toEqual(expected);
    expect(owned.data).toBe(secret.data);
    expect(secret.metadata.ownerReferences).toEqual(ownerReferences); // the input is not modified
  });

  it.each<[string, Deployment]>([
    ['no uid (not stored yet)', { metadata: { name: 'x' } }],
    ['an empty name', { metadata: { name: '', uid: 'u' } }],
  ])('refuses a Deployment with %s', (_what, d) => {
    expect(() => ownedBy({ metadata: { name: 's' } }, d)).toThrow(/metadata.uid/);
  });
});
