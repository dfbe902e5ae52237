/**
 * A missing OPI_NAMESPACE, said once: every Lease claim and every create in it fails the same way, and a
 * warning per attempt would bury the one fact an operator needs. The first failure logs an error naming
 * the namespace and what to do; the API's /readyz shows it (through Redis) while it lasts; the first
 * success after it says it is over.
 */
import { missingNamespace } from '@opi/kube';
import type { Logger } from '@opi/logging';
import type { StateStore } from '@opi/state';

export class NamespaceAlarm {
  private raised = false;

  constructor(
    private readonly o: {
      namespace: string;
      logger: Logger;
      store: Pick<StateStore, 'setClusterProblem'>;
    },
  ) {}

  /** True when `err` says the namespace does not exist; the first time, that is logged loudly. */
  noticed(err: unknown): boolean {
    const missing = missingNamespace(err);
    if (missing === undefined) return false;
    const problem =
      `namespace ${missing} does not exist: nothing can run until it is created ` +
      `(kubectl create namespace ${missing}) or OPI_NAMESPACE names one that exists`;
    if (!this.raised) {
      this.raised = true;
      this.o.logger.error({ namespace: missing }, problem);
    }
    this.publish(problem);
    return true;
  }

  /** Something in the namespace worked: the alarm, if raised, is over. */
  cleared(): void {
    if (!this.raised) return;
    this.raised = false;
    this.o.logger.info({ namespace: this.o.namespace }, `namespace ${this.o.namespace} exists now`);
    this.publish(undefined);
  }

  private publish(problem: string | undefined): void {
    this.o.store.setClusterProblem(problem).catch((err: unknown) => {
      this.o.logger.debug({ err }, 'could not record the namespace problem in Redis');
    });
  }
}
