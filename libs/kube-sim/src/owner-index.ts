/**
 * Which objects name an owner in their ownerReferences, by the owner's uid: what the garbage collector
 * and propagation policies look dependents up by.
 */
import type { KubeObject } from './types.js';

export class OwnerIndex {
  /** owner uid → the refs (`${typeKey}|${objectKey}`) of its dependents */
  private readonly dependents = new Map<string, Set<string>>();

  /** The refs of the objects whose ownerReferences name this uid. */
  refsOf(uid: string): Iterable<string> {
    return this.dependents.get(uid) ?? [];
  }

  has(uid: string): boolean {
    return (this.dependents.get(uid)?.size ?? 0) > 0;
  }

  /** An object changed from `before` to `after` (undefined: absent). */
  update(ref: string, before: KubeObject | undefined, after: KubeObject | undefined): void {
    const was = new Set((before?.metadata.ownerReferences ?? []).map((r) => r.uid));
    const now = new Set((after?.metadata.ownerReferences ?? []).map((r) => r.uid));
    for (const uid of was) {
      if (now.has(uid)) continue;
      const s = this.dependents.get(uid);
      s?.delete(ref);
      if (s?.size === 0) this.dependents.delete(uid);
    }
    for (const uid of now) {
      if (was.has(uid)) continue;
      let s = this.dependents.get(uid);
      if (!s) {
        s = new Set();
        this.dependents.set(uid, s);
      }
      s.add(ref);
    }
  }
}
