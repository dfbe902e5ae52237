/** A NATS for the routing unit tests. */
import { expect } from '@jest/globals';
import type { RegistryMessage } from '@opi/translation';
import type { NatsPort } from './nats-port.js';

/** A NATS that records what is published and lets a test play gorouter's side. */
export class FakeNats implements NatsPort {
  readonly sent: { subject: string; m: RegistryMessage }[] = [];
  up = true;
  greetReplies: string[] = [];
  private readonly subs = new Map<string, (body: string) => void>();
  private readonly reconnects = new Set<() => void>();
  publish(subject: string, body: string): void {
    this.sent.push({ subject, m: JSON.parse(body) as RegistryMessage });
  }
  /** A flush that never answers, as on a connection that is cut. */
  flushHangs = false;
  flush(): Promise<void> {
    return this.flushHangs ? new Promise<void>(() => undefined) : Promise.resolve();
  }
  subscribe(subject: string, onMessage: (body: string) => void): () => void {
    this.subs.set(subject, onMessage);
    return () => this.subs.delete(subject);
  }
  async requestAll(subject: string, _body: string, windowMs: number): Promise<string[]> {
    expect(subject).toBe('router.greet');
    await new Promise((r) => setTimeout(r, windowMs));
    return this.greetReplies;
  }
  connected(): boolean {
    return this.up;
  }
  onReconnect(listener: () => void): () => void {
    this.reconnects.add(listener);
    return () => this.reconnects.delete(listener);
  }
  routerStart(intervalS: number): void {
    this.subs.get('router.start')?.(
      JSON.stringify({ id: '0-abc', hosts: ['192.0.2.2'], minimumRegisterIntervalInSeconds: intervalS }),
    );
  }
  reconnect(): void {
    for (const l of this.reconnects) l();
  }
  take(): { subject: string; m: RegistryMessage }[] {
    return this.sent.splice(0);
  }
}
