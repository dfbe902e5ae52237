/** What every controller shares: the store, the resource types, pacing, the seeded RNG, timers and events. */
import type { BehaviourConfig } from '../behaviour.js';
import type { ResourceType } from '../resources.js';
import type { Store } from '../store.js';
import { generateNameSuffix } from '../validation.js';
import { EventRecorder } from './events.js';
import { Timers } from './timers.js';

export interface Types {
  namespaces: ResourceType;
  nodes: ResourceType;
  pods: ResourceType;
  events: ResourceType;
  replicasets: ResourceType;
  deployments: ResourceType;
  statefulsets: ResourceType;
  controllerrevisions: ResourceType;
  jobs: ResourceType;
  resourcequotas: ResourceType;
}

export class Context {
  readonly types: Types;
  readonly timers = new Timers();
  readonly recorder: EventRecorder;

  constructor(
    readonly store: Store,
    public behaviour: BehaviourConfig,
    readonly random: () => number,
  ) {
    const r = store.registry;
    this.types = {
      namespaces: r.get('', 'namespaces'),
      nodes: r.get('', 'nodes'),
      pods: r.get('', 'pods'),
      events: r.get('', 'events'),
      replicasets: r.get('apps', 'replicasets'),
      deployments: r.get('apps', 'deployments'),
      statefulsets: r.get('apps', 'statefulsets'),
      controllerrevisions: r.get('apps', 'controllerrevisions'),
      jobs: r.get('batch', 'jobs'),
      resourcequotas: r.get('', 'resourcequotas'),
    };
    this.recorder = new EventRecorder(store, this.types.events, this.timers);
  }

  now(): number {
    return this.store.now();
  }

  /** A delay plus the configured uniform jitter. */
  jittered(ms: number): number {
    return Math.max(0, ms) + this.random() * Math.max(0, this.behaviour.jitterMs);
  }

  /** The 5-character suffix of generated pod names (`<owner>-x7k2p`). */
  nameSuffix(): string {
    return generateNameSuffix(this.random);
  }
}
