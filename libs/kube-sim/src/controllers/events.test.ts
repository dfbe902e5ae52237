import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ResourceRegistry } from '../resources.js';
import { Store } from '../store.js';
import type { KubeObject } from '../types.js';
import { EventRecorder } from './events.js';
import { Timers } from './timers.js';

let store: Store;
let timers: Timers;
let recorder: EventRecorder;
let pod: KubeObject;
let clock = Date.parse('2024-05-01T10:00:00Z');

beforeEach(() => {
  clock = Date.parse('2024-05-01T10:00:00Z');
  store = new Store(new ResourceRegistry(), { now: () => clock });
  const meta = { uid: '', resourceVersion: '', creationTimestamp: '' };
  store.create(store.registry.get('', 'namespaces'), {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { ...meta, name: 'ns' },
  });
  pod = store.create(store.registry.get('', 'pods'), {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...meta, name: 'p', namespace: 'ns' },
    spec: { containers: [{ name: 'app', image: 'nginx' }] },
  });
  timers = new Timers();
  recorder = new EventRecorder(store, store.registry.get('', 'events'), timers);
});
afterEach(() => {
  timers.stop();
});

const events = () => store.all(store.registry.get('', 'events'));

describe('event recorder', () => {
  it('writes core/v1 Events shaped as the legacy recorder does', () => {
    recorder.record(
      pod,
      'Warning',
      'BackOff',
      'Back-off restarting failed container',
      { component: 'kubelet', host: 'n1' },
      'spec.containers{app}',
    );
    const [ev, ...rest] = events();
    expect(rest).toHaveLength(0);
    expect(ev!.metadata.name).toMatch(/^p\.[0-9a-f]{16}$/);
    expect(ev!.metadata.namespace).toBe('ns');
    expect(ev).toMatchObject({
      involvedObject: {
        kind: 'Pod',
        namespace: 'ns',
        name: 'p',
        uid: pod.metadata.uid,
        apiVersion: 'v1',
        resourceVersion: pod.metadata.resourceVersion,
        fieldPath: 'spec.containers{app}',
      },
      reason: 'BackOff',
      message: 'Back-off restarting failed container',
      type: 'Warning',
      source: { component: 'kubelet', host: 'n1' },
      firstTimestamp: '2024-05-01T10:00:00Z',
      lastTimestamp: '2024-05-01T10:00:00Z',
      count: 1,
      reportingComponent: 'kubelet',
      reportingInstance: 'n1',
    });
  });

  it('folds repeats into count and lastTimestamp, and keeps different messages apart', () => {
    const src = { component: 'kubelet' };
    recorder.record(pod, 'Normal', 'Pulled', 'already present', src);
    clock += 5000;
    recorder.record(pod, 'Normal', 'Pulled', 'already present', src);
    recorder.record(pod, 'Normal', 'Pulled', 'already present', src);
    recorder.record(pod, 'Normal', 'Pulled', 'something else', src);
    const all = events();
    expect(all).toHaveLength(2);
    const repeated = all.find((e) => e['message'] === 'already present')!;
    expect(repeated['count']).toBe(3);
    expect(repeated['firstTimestamp']).toBe('2024-05-01T10:00:00Z');
    expect(repeated['lastTimestamp']).toBe('2024-05-01T10:00:05Z');
    expect(new Set(all.map((e) => e.metadata.name)).size).toBe(2);
  });

  it('starts over when the folded Event was deleted, and expires old Events', () => {
    const src = { component: 'kubelet' };
    recorder.record(pod, 'Normal', 'Started', 'Started container app', src);
    const first = events()[0]!;
    store.delete(store.registry.get('', 'events'), 'ns', first.metadata.name);
    recorder.record(pod, 'Normal', 'Started', 'Started container app', src);
    expect(events()).toHaveLength(1);
    expect(events()[0]!['count']).toBe(1);
    clock += 2 * 60 * 60 * 1000;
    recorder.sweep();
    expect(events()).toHaveLength(0);
  });

  it('never throws, even when the namespace refuses new content', () => {
    store.delete(store.registry.get('', 'namespaces'), undefined, 'ns');
    expect(() => {
      recorder.record(pod, 'Normal', 'Killing', 'Stopping container app', { component: 'kubelet' });
    }).not.toThrow();
  });
});
