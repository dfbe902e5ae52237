/**
 * The pods the cache writer holds, by owner: each LRP's live app pods and each task or staging Job's pods.
 * In memory only; the instance indexes are assigned at write time against what Redis holds.
 */
import { type AppPodSummary, type ManagedPodSummary, jobPodKey } from '@opi/translation';
import type { Pod } from '@opi/kube-objects';

export class PodIndex {
  /**
   * LRP → its live app pods: the pod itself when it is the only one (most LRPs), else an array. At
   * 100,000 LRPs a Map per LRP cost ten times an array, and an array per LRP was megabytes more.
   */
  private readonly lrpPods = new Map<string, AppPodSummary | AppPodSummary[]>();
  /** `namespace/job` → its pods by name. */
  private readonly jobPods = new Map<string, Map<string, Pod>>();
  private appPods = 0;

  /** App pods held now (instances). */
  get appPodCount(): number {
    return this.appPods;
  }

  /** LRPs with at least one live pod. */
  lrps(): IterableIterator<string> {
    return this.lrpPods.keys();
  }

  add(s: ManagedPodSummary): void {
    if (s.kind === 'app') {
      this.appPods++;
      const had = this.lrpPods.get(s.processGuid);
      if (had === undefined) this.lrpPods.set(s.processGuid, s);
      else if (Array.isArray(had)) had.push(s);
      else this.lrpPods.set(s.processGuid, [had, s]);
    } else {
      const key = jobPodKey(s.pod);
      let pods = this.jobPods.get(key);
      if (!pods) this.jobPods.set(key, (pods = new Map<string, Pod>()));
      pods.set(s.pod.metadata.name, s.pod);
    }
  }

  remove(s: ManagedPodSummary): void {
    if (s.kind === 'app') {
      const held = this.podsOf(s.processGuid);
      const pods = held.filter((p) => p.name !== s.name);
      this.appPods -= held.length - pods.length;
      if (pods.length > 1) this.lrpPods.set(s.processGuid, pods);
      else if (pods[0]) this.lrpPods.set(s.processGuid, pods[0]);
      else this.lrpPods.delete(s.processGuid);
    } else {
      const key = jobPodKey(s.pod);
      const pods = this.jobPods.get(key);
      pods?.delete(s.pod.metadata.name);
      if (pods?.size === 0) this.jobPods.delete(key);
    }
  }

  podsOf(processGuid: string): AppPodSummary[] {
    const held = this.lrpPods.get(processGuid);
    return held === undefined ? [] : Array.isArray(held) ? held : [held];
  }

  podsOfJob(namespace: string, name: string): Pod[] {
    return [...(this.jobPods.get(`${namespace}/${name}`)?.values() ?? [])];
  }

  /**
   * The process guid string the LRP's pods already hold, if any: a Deployment and its pods then share one
   * (three copies per LRP otherwise, parsed anew from each object).
   */
  sharedGuid(processGuid: string): string {
    const held = this.lrpPods.get(processGuid);
    if (held === undefined) return processGuid;
    return (Array.isArray(held) ? held[0]?.processGuid : held.processGuid) ?? processGuid;
  }
}
