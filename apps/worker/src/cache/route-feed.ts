/**
 * What routing is told of each LRP: its routes (from its workload's annotations, as the watch holds them)
 * and its Ready instances with the index /instances shows, whenever either changed.
 */
import {
  type AppPodSummary,
  type RouteSource,
  type WorkloadSummary,
  sameRouteSource,
} from '@opi/translation';
import { shownIndexes } from '@opi/domain';
import type { RouteSink } from '../routing/route-emitter.js';

export class RouteFeed {
  /** LRP → its routes, for LRPs with routes. */
  private readonly sources = new Map<string, RouteSource>();

  constructor(private readonly sink: RouteSink) {}

  /** A workload event: whether the LRP's routes were added, changed or went (with the workload). */
  workloadSeen(next: WorkloadSummary | undefined, prev: WorkloadSummary | undefined): boolean {
    const held = next ?? prev;
    if (!held) return false;
    const had = this.sources.get(held.processGuid);
    if (sameRouteSource(had, next?.routes)) return false;
    if (next?.routes) this.sources.set(held.processGuid, next.routes);
    else this.sources.delete(held.processGuid);
    return true;
  }

  /** Tells routing the LRP's routes and Ready instances, each with the index /instances shows. */
  lrpWritten(
    pg: string,
    run: readonly AppPodSummary[],
    assignments: ReadonlyMap<string, number>,
    changedAt: number | undefined,
  ): void {
    const source = this.sources.get(pg);
    if (!source) {
      this.sink.lrpRouted(pg, undefined, [], changedAt);
      return;
    }
    const shown = shownIndexes(
      run.map((p) => ({ index: assignments.get(p.name) ?? 0, ordinal: p.ordinal !== undefined })),
      source.desired,
    );
    const instances = [];
    for (const [i, p] of run.entries()) {
      if (p.ip) instances.push({ ip: p.ip, uid: p.uid ?? '', index: shown[i] ?? 0 });
    }
    this.sink.lrpRouted(pg, source, instances, changedAt);
  }
}
