/**
 * The ResourceQuota controller's part that `kubectl describe quota` shows: `status.hard` as specified and
 * `status.used` by the namespace's counted pods, recomputed when a quota or a pod of its namespace
 * changes. Admission does not read it (quota.ts counts the stored pods at each create).
 */
import { quotaStatus } from '../quota.js';
import { sameJson } from '../store-values.js';
import type { Context } from './context.js';
import { KeyedController } from './queue.js';

export class QuotaController extends KeyedController {
  constructor(private readonly ctx: Context) {
    super('resourcequota', ctx.timers);
  }

  /** A pod of this namespace changed: its quotas, if any, are recounted. */
  onPod(namespace: string | undefined): void {
    if (namespace && this.ctx.store.all(this.ctx.types.resourcequotas, namespace).length > 0) {
      this.enqueue(namespace);
    }
  }

  protected sync(namespace: string): void {
    const { store, types } = this.ctx;
    const quotas = store.all(types.resourcequotas, namespace);
    if (quotas.length === 0) return;
    const pods = store.all(types.pods, namespace);
    const now = this.ctx.now();
    for (const quota of quotas) {
      if (quota.metadata.deletionTimestamp) continue;
      const status = quotaStatus(quota, pods, now);
      if (sameJson(quota['status'], status)) continue;
      store.replace(types.resourcequotas, { ...quota, status }, { subresource: 'status' });
    }
  }
}
