/**
 * Which LRPs' pods the cluster refuses (docs/decisions/0012-pods-refused.md), as the watch shows it: a
 * Deployment's ReplicaFailure condition, or a StatefulSet's FailedCreate Events within their window. What
 * an LRP's instances entry says of it (`unplaced`) is judged when the entry is written.
 */
import {
  STATEFULSET_REFUSAL_WINDOW_MS,
  type StatefulSetRefusal,
  type WorkloadSummary,
  podsRefusalKind,
  podsRefusedMessage,
  statefulSetRefusal,
} from '@opi/translation';
import type { Logger } from '@opi/logging';

export interface RefusedPodsDeps {
  logger: Logger;
  /** The StatefulSet as the watch holds it. */
  statefulSet(namespace: string, name: string): WorkloadSummary | undefined;
  /** Its FailedCreate Events as the watch holds them. */
  refusalEvents(namespace: string, statefulSet: string): StatefulSetRefusal[];
  /** What the LRP's entry says of refused pods may have changed: it must be written again. */
  changed(processGuid: string): void;
  /** An LRP's pods began to be refused, once per episode, by reason (quota, …). */
  began(reason: string): void;
}

export class RefusedPods {
  /** LRP → the API server's message refusing its pods, as last found. */
  private readonly refused = new Map<
    string,
    { message: string; statefulSet?: { atMs: number; replicas: number } }
  >();
  /** LRP → what its entry says of refused pods now: logged and counted when it changes. */
  private readonly shown = new Map<string, string>();
  /**
   * StatefulSet LRP → since when refusal Events said before no longer hold: its spec changed, or its
   * pods all came.
   */
  private readonly specChangedAt = new Map<string, number>();
  /** LRP → the timer that looks again once its StatefulSet refusal is past the window. */
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly deps: RefusedPodsDeps) {}

  /** LRPs whose pods are refused (their entry is written even without pods). */
  lrps(): IterableIterator<string> {
    return this.refused.keys();
  }

  stop(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  /**
   * A workload event: a Deployment carries the refusal in its condition; a StatefulSet whose spec changed
   * no longer stands by the Events said before (they are judged again from the next one).
   */
  workloadSeen(next: WorkloadSummary | undefined, prev: WorkloadSummary | undefined): void {
    const held = next ?? prev;
    if (!held) return;
    const pg = held.processGuid;
    if (held.kind === 'deployment') {
      const now = next?.podsRefused;
      if (now === this.refused.get(pg)?.message) return;
      if (now === undefined) this.refused.delete(pg);
      else this.refused.set(pg, { message: now });
      this.deps.changed(pg);
      return;
    }
    if (!next) {
      this.specChangedAt.delete(pg);
      clearTimeout(this.timers.get(pg));
      this.timers.delete(pg);
      if (this.refused.delete(pg)) this.deps.changed(pg);
      return;
    }
    if (prev && next.specGeneration !== prev.specGeneration) this.specChangedAt.set(pg, Date.now());
    this.statefulSetSeen(held.namespace, held.name);
  }

  /** A StatefulSet's refusal Events or the set changed: what its LRP's entry says is judged again. */
  statefulSetSeen(namespace: string, statefulSet: string): void {
    const sts = this.deps.statefulSet(namespace, statefulSet);
    if (!sts) return;
    const pg = sts.processGuid;
    const latest = statefulSetRefusal(this.deps.refusalEvents(namespace, statefulSet), {
      pods: 0,
      replicas: 1,
      specChangedAtMs: this.specChangedAt.get(pg),
      nowMs: Date.now(),
    });
    const had = this.refused.get(pg);
    const replicas = sts.replicas ?? 1;
    const same = latest
      ? had?.message === latest.message &&
        had.statefulSet?.atMs === latest.atMs &&
        had.statefulSet.replicas === replicas
      : had === undefined;
    // A StatefulSet's status events change nothing here: only a changed refusal rewrites the entry.
    if (same) return;
    clearTimeout(this.timers.get(pg));
    this.timers.delete(pg);
    if (!latest) {
      this.refused.delete(pg);
    } else {
      this.refused.set(pg, { message: latest.message, statefulSet: { atMs: latest.atMs, replicas } });
      // Past the window without another Event, the refusal is over: look again then.
      const due = latest.atMs + STATEFULSET_REFUSAL_WINDOW_MS - Date.now() + 1000;
      const timer = setTimeout(() => {
        this.timers.delete(pg);
        this.statefulSetSeen(namespace, statefulSet);
      }, due);
      timer.unref();
      this.timers.set(pg, timer);
    }
    this.deps.changed(pg);
  }

  /**
   * What the LRP's entry says of refused pods: the worded message, unless its StatefulSet's pods now exist
   * up to the desired count or the refusal is past its window. A change is logged and, when it begins,
   * counted (once per episode, not per Event).
   */
  unplacedOf(pg: string, pods: number): string | undefined {
    const r = this.refused.get(pg);
    let message: string | undefined;
    if (r) {
      const sts = r.statefulSet;
      if (sts !== undefined && pods >= sts.replicas) {
        // Superseded: its pods were let in. Events said before now no longer hold (a later restart's
        // missing pod must not bring the old refusal back).
        this.refused.delete(pg);
        this.specChangedAt.set(pg, Date.now());
      } else if (sts === undefined || Date.now() - sts.atMs <= STATEFULSET_REFUSAL_WINDOW_MS) {
        message = r.message;
      }
    }
    const shown = this.shown.get(pg);
    if (message !== shown) {
      if (message === undefined) {
        this.shown.delete(pg);
        this.deps.logger.info({ processGuid: pg }, 'instances no longer refused by the cluster');
      } else {
        this.shown.set(pg, message);
        this.deps.logger.info({ processGuid: pg, refused: message }, 'instances refused by the cluster');
        if (shown === undefined) this.deps.began(podsRefusalKind(message));
      }
    }
    return message === undefined ? undefined : podsRefusedMessage(message);
  }
}
