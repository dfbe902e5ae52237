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

/**
 * `text` made DNS-1123-safe and at most `max` characters: lower case, any other run of characters (hyphens
 * too) becomes one '-', no '-' at either end. May be empty.
 */
export function dnsLabelPart(text: string, max: number): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, max)
    .replace(/-+$/, '');
}

/** The first 10 hex characters of sha256(`text`): what keeps names unique once their readable part is cut. */
export function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, HASH_CHARS);
}

/** `<app>-<space>` made DNS-1123-safe (see dnsLabelPart), cut to 40 characters; `app` when nothing is left. */
export function namePrefix(appName: string, spaceName: string): string {
  return dnsLabelPart(`${appName}-${spaceName}`, PREFIX_MAX) || 'app';
}

/** `<prefix>-<10 hex of sha256(process_guid)>`: at most 51 characters, a valid DNS-1123 label. */
export function workloadName(lrp: Naming): string {
  return `${namePrefix(lrp.appName, lrp.spaceName)}-${shortHash(lrp.processGuid)}`;
}

/** The image pull Secret of the LRP's workload. */
export function registrySecretName(lrp: Naming): string {
  return `${workloadName(lrp)}-registry`;
}
