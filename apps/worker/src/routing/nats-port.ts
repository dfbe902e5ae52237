/** What the route emitter needs of NATS: the one adapter (nats-client.ts) and the tests' fakes give it. */
export interface NatsPort {
  /** Queued on the connection (sent once connected again after a cut). */
  publish(subject: string, body: string): void;
  /** Resolves once the server has everything published so far. */
  flush(): Promise<void>;
  /** Calls back with every message's body on the subject until the returned function is called. */
  subscribe(subject: string, onMessage: (body: string) => void): () => void;
  /** Publishes with a fresh reply subject and answers every reply's body seen within `windowMs`. */
  requestAll(subject: string, body: string, windowMs: number): Promise<string[]>;
  connected(): boolean;
  /** Calls back after each reconnect (gorouter may have lost what we sent meanwhile). */
  onReconnect(listener: () => void): () => void;
}
