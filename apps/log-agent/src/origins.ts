/**
 * Whose output a pod's log files hold, as Diego tags it: the pod's labels say what it runs (an LRP, a
 * task, a staging) and for which guid, the records in Redis give the names, and for an LRP the instances
 * cache gives the index `/instances` shows. Read once per pod and kept (an LRP's again every
 * `refreshMs`, as its shown index can move with a scale); a pod not of this service is remembered as such.
 */
import type { Pod } from '@opi/kube-objects';
import type { StateStore, TaskStore } from '@opi/state';
import { presentInstances } from '@opi/state';
import {
  ANNOTATION_PROCESS_GUID,
  LABEL_MANAGED_BY,
  LABEL_SOURCE_TYPE,
  LABEL_STAGING_GUID,
  LABEL_TASK_GUID,
  type LogSource,
  MANAGED_BY,
  SOURCE_TYPE_APP,
  SOURCE_TYPE_STAGING,
  SOURCE_TYPE_TASK,
  logSourceOf,
} from '@opi/translation';

export interface OriginDeps {
  getPod(namespace: string, name: string): Promise<Pod | undefined>;
  store: Pick<StateStore, 'lrpWithInstances'>;
  tasks: Pick<TaskStore, 'getTask' | 'getStaging'>;
  refreshMs?: number;
  now?: () => number;
}

/** A pod's source, `unmanaged` (not ours: its lines are not shipped), or `pending` (ask again later). */
export type Resolution = LogSource | 'unmanaged' | 'pending';

interface Known {
  resolution: Resolution;
  at: number;
}

export class LogOrigins {
  private readonly known = new Map<string, Known>();
  private readonly inFlight = new Map<string, Promise<Resolution>>();
  private readonly refreshMs: number;
  private readonly now: () => number;

  constructor(private readonly deps: OriginDeps) {
    this.refreshMs = deps.refreshMs ?? 15_000;
    this.now = deps.now ?? Date.now;
  }

  /** What is known now, without asking (undefined: never asked, or due again). */
  cached(podUid: string): Resolution | undefined {
    const k = this.known.get(podUid);
    if (!k || k.resolution === 'pending') return undefined;
    if (k.resolution !== 'unmanaged' && this.now() - k.at > this.refreshMs) return undefined;
    return k.resolution;
  }

  /** Asks (once at a time per pod) and remembers the answer. */
  resolve(pod: { namespace: string; pod: string; podUid: string }): Promise<Resolution> {
    const running = this.inFlight.get(pod.podUid);
    if (running) return running;
    const asked = this.ask(pod)
      .catch((): Resolution => 'pending')
      .then((resolution) => {
        const previous = this.known.get(pod.podUid);
        // A transient failure keeps what was known (an LRP's index from the last refresh).
        if (resolution !== 'pending' || !previous) this.known.set(pod.podUid, { resolution, at: this.now() });
        this.inFlight.delete(pod.podUid);
        return resolution === 'pending' && previous ? previous.resolution : resolution;
      });
    this.inFlight.set(pod.podUid, asked);
    return asked;
  }

  /** The pod's log directory is gone. */
  forget(podUid: string): void {
    this.known.delete(podUid);
  }

  private async ask(where: { namespace: string; pod: string; podUid: string }): Promise<Resolution> {
    const pod = await this.deps.getPod(where.namespace, where.pod);
    // Gone (or another pod of that name now): its lines cannot be told apart from nobody's.
    if (!pod || pod.metadata.uid !== where.podUid) return 'unmanaged';
    const labels = pod.metadata.labels ?? {};
    if (labels[LABEL_MANAGED_BY] !== MANAGED_BY) return 'unmanaged';
    switch (labels[LABEL_SOURCE_TYPE] ?? '') {
      case SOURCE_TYPE_APP:
        return this.lrp(pod);
      case SOURCE_TYPE_TASK: {
        const rec = await this.deps.tasks.getTask(labels[LABEL_TASK_GUID] ?? '');
        return rec ? logSourceOf({ kind: 'task', task: rec.task }) : 'pending';
      }
      case SOURCE_TYPE_STAGING: {
        const rec = await this.deps.tasks.getStaging(labels[LABEL_STAGING_GUID] ?? '');
        return rec ? logSourceOf({ kind: 'staging', staging: rec.staging }) : 'pending';
      }
      default:
        return 'unmanaged';
    }
  }

  private async lrp(pod: Pod): Promise<Resolution> {
    const processGuid = pod.metadata.annotations?.[ANNOTATION_PROCESS_GUID];
    if (!processGuid) return 'unmanaged';
    const { record, cached, refusal } = await this.deps.store.lrpWithInstances(processGuid);
    if (record?.state !== 'desired') return 'pending';
    // The index `/instances` shows for this pod (the watch assigns it within a second of the pod's start).
    const shown = presentInstances(
      cached?.instances ?? [],
      record.lrp.instances,
      refusal?.message,
      cached?.unplaced,
    );
    const row = shown.find((r) => r.podName === pod.metadata.name);
    if (!row) return 'pending';
    return logSourceOf({ kind: 'lrp', lrp: record.lrp, index: row.index, podUid: pod.metadata.uid ?? '' });
  }
}
