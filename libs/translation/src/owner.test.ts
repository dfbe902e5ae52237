import { describe, expect, it } from '@jest/globals';
import type { Deployment, OwnerReference, Secret } from '@opi/kube-objects';
import { ownedBy } from './owner.js';

const deployment: Deployment = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'app-dev-0123456789', uid: 'uid-1', namespace: 'ns' },
};
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
    ['no uid (not stored yet)', { ...deployment, metadata: { name: 'x' } }],
    ['an empty name', { ...deployment, metadata: { name: '', uid: 'u' } }],
    ['no kind', { metadata: { name: 'x', uid: 'u' } }],
  ])('refuses an owner with %s', (_what, d) => {
    expect(() => ownedBy({ metadata: { name: 's' } }, d)).toThrow(/metadata.uid/);
  });

  it.each([
    ['a StatefulSet', 'apps/v1', 'StatefulSet'],
    ['a Job', 'batch/v1', 'Job'],
  ])('names %s by its own kind', (_what, apiVersion, kind) => {
    const owner = { apiVersion, kind, metadata: { name: 'o', uid: 'uid-2' } };
    const secret: Secret = { metadata: { name: 's' }, data: {} };
    expect(ownedBy(secret, owner).metadata.ownerReferences).toEqual([
      { apiVersion, kind, name: 'o', uid: 'uid-2', controller: true, blockOwnerDeletion: true },
    ]);
  });
});
