/**
 * Object names. Deterministic, so that every worker computes the same name for the same LRP and a retried
 * create hits "already exists" instead of making a second workload. Objects are found again by labels;
 * the name is only unique and readable.
 */
import { createHash } from 'node:crypto';
import type { DesiredLrp } from '@opi/domain';

/** Room left for the hash and suffixes within the 63-character limits of names and label values. */
const PREFIX_MAX = 40;
const HASH_CHARS = 10;

type Naming = Pick<DesiredLrp, 'appName' | 'spaceName' | 'processGuid'>;

/** `<app>-<space>` made DNS-1123-safe: lower case, any other run of characters (hyphens too) becomes one '-'. */
export function namePrefix(appName: string, spaceName: string): string {
  const prefix = `${appName}-${spaceName}`
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, PREFIX_MAX)
    .replace(/-+$/, '');
  return prefix || 'app';
}

/** `<prefix>-<10 hex of sha256(process_guid)>`: at most 51 characters, a valid DNS-1123 label. */
export function workloadName(lrp: Naming): string {
  const hash = createHash('sha256').update(lrp.processGuid).digest('hex').slice(0, HASH_CHARS);
  return `${namePrefix(lrp.appName, lrp.spaceName)}-${hash}`;
}

/** The image pull Secret of the LRP's workload. */
export function registrySecretName(lrp: Naming): string {
  return `${workloadName(lrp)}-registry`;
}
