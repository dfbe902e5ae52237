/** The guids the tests and the bench give LRPs and tasks: the `n`th under a salt, or a fresh LRP. */
import { randomUUID } from 'node:crypto';

/** A guid in UUID form, the same for the same `n` and `salt` (only its first 8 characters count). */
export function uuid(n: number, salt = 'a'): string {
  return `${salt.padEnd(8, '0').slice(0, 8)}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

/** An LRP's identities as CC makes them. */
export interface Lrp {
  guid: string;
  version: string;
  processGuid: string;
}

/** A new LRP with a random guid and version. */
export function newLrp(): Lrp {
  const guid = randomUUID();
  const version = randomUUID();
  return { guid, version, processGuid: `${guid}-${version}` };
}
