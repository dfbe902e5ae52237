/** What the handlers need, passed in by main.ts (real) or by tests (fakes with behaviour). */
import type { KubernetesPort } from '@opi/kube';
import type { Logger } from '@opi/logging';
import type { JobProducer } from '@opi/queue';
import type { StateStore } from '@opi/state';

export interface HandlerDeps {
  store: StateStore;
  kube: KubernetesPort;
  producer: JobProducer;
  logger: Logger;
  runAsNonRoot: boolean;
  /** Where the sync looks for workloads: one namespace, or undefined for all (LRPs may name their own). */
  syncNamespace: string | undefined;
}
