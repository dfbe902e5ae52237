/** What the port relies on of any object, and what the API server fills on one it returns. */
import type { ObjectMeta, Time } from '@opi/kube-objects';

/** What every object has; the adapter and the fake rely on nothing else. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/** Metadata the API server always fills on an object it returns. */
export interface StoredMeta extends ObjectMeta {
  name: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: Time;
}

/** An object as read back from the cluster: identity and resourceVersion are known. */
export type Stored<T extends KubeObject> = T & { metadata: StoredMeta };
