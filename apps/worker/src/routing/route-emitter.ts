/**
 * Tells gorouter over NATS where every routed instance is, as Diego's route-emitter does, from the cache
 * writer's watch (never a LIST): each change of an LRP's Ready instances or routes publishes the
 * difference at once; every registration is sent again once per register interval, spread over it;
 * everything is sent again shortly after a `router.start` (a gorouter started or reconnected) and after
 * our own reconnect. One per Lease term: only the holder publishes, and not once it may have lost the
 * Lease, so a deposed holder cannot register again what its successor unregistered.
 */
import type { Logger } from '@opi/logging';
import type { OpiMetrics } from '@opi/metrics';
import {
  type Registrations,
  type RouteSource,
  type RoutedInstance,
  registrationChanges,
  registrationsOf,
} from '@opi/translation';
import type { NatsPort } from './nats-port.js';

export const REGISTER = 'router.register';
export const UNREGISTER = 'router.unregister';
/** Used until a gorouter says its interval (CF's BOSH default, `requested_route_registration_interval`). */
export const DEFAULT_INTERVAL_S = 20;
/** route-emitter greets once a second up to 30 times until a gorouter answers. */
const GREET_ATTEMPTS = 30;
/** Messages between flushes of a full emission, so the connection's buffer stays bounded. */
const EMIT_CHUNK = 1000;

export type RoutingMetrics = Pick<
  OpiMetrics,
  'routingEndpoints' | 'routingMessages' | 'routingRegisterInterval' | 'routingLag'
>;

/** What the cache writer tells the emitter: an LRP's routes (undefined: none, or gone) and Ready instances. */
export interface RouteSink {
  lrpRouted(
    processGuid: string,
    source: RouteSource | undefined,
    instances: readonly RoutedInstance[],
    changedAtMs?: number,
  ): void;
}

export interface RouteEmitterOptions {
  nats: NatsPort;
  /** False as soon as the Lease may be another's. */
  leading: () => boolean;
  logger: Logger;
  metrics?: RoutingMetrics;
  /** The heartbeat's step (each step sends its share of the interval). */
  tickMs?: number;
  /** How long replies to one `router.greet` are collected. */
  greetWindowMs?: number;
  random?: () => number;
}

/** `router.start` / `router.greet`'s answer (gorouter's common/component.go). */
interface RouterHello {
  id?: unknown;
  minimumRegisterIntervalInSeconds?: unknown;
}

export class RouteEmitter implements RouteSink {
  private readonly byLrp = new Map<string, Registrations>();
  private endpoints = 0;
  private intervalS = DEFAULT_INTERVAL_S;
  /** Router id → the interval it asked for. */
  private readonly routers = new Map<string, number>();
  private readonly tickMs: number;
  private readonly random: () => number;
  private heartbeat: NodeJS.Timeout | undefined;
  private cursor: Iterator<string> | undefined;
  private emitTimer: NodeJS.Timeout | undefined;
  private emitting: Promise<void> | undefined;
  private emitAgain = false;
  private readonly undo: (() => void)[] = [];
  private stopped = false;

  constructor(private readonly o: RouteEmitterOptions) {
    this.tickMs = o.tickMs ?? 1000;
    this.random = o.random ?? Math.random;
    o.metrics?.routingRegisterInterval.set(this.intervalS);
  }

  start(): void {
    this.undo.push(
      this.o.nats.subscribe('router.start', (body) => {
        this.routerSaidHello(body, 'router.start');
        this.emitAllSoon();
      }),
      this.o.nats.onReconnect(() => {
        this.emitAllSoon();
      }),
    );
    this.heartbeat = setInterval(() => {
      this.beat();
    }, this.tickMs);
    this.heartbeat.unref();
    void this.greet();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.heartbeat);
    clearTimeout(this.emitTimer);
    for (const u of this.undo.splice(0)) u();
    this.o.metrics?.routingEndpoints.set(0);
  }

  /** Registrations kept alive now. */
  get size(): number {
    return this.endpoints;
  }

  get registerIntervalS(): number {
    return this.intervalS;
  }

  lrpRouted(
    processGuid: string,
    source: RouteSource | undefined,
    instances: readonly RoutedInstance[],
    changedAtMs?: number,
  ): void {
    const before = this.byLrp.get(processGuid);
    if (!before && !source) return;
    const after: Registrations = source ? registrationsOf(source, instances) : new Map<string, string>();
    const { unregister, register } = registrationChanges(before ?? new Map<string, string>(), after);
    if (after.size > 0) this.byLrp.set(processGuid, after);
    else this.byLrp.delete(processGuid);
    this.endpoints += after.size - (before?.size ?? 0);
    this.o.metrics?.routingEndpoints.set(this.endpoints);
    for (const m of unregister) this.publish(UNREGISTER, m);
    for (const m of register) this.publish(REGISTER, m);
    if (changedAtMs !== undefined && unregister.length + register.length > 0) {
      this.o.metrics?.routingLag.observe(Math.max(0, Date.now() - changedAtMs) / 1000);
    }
  }

  private publish(subject: string, m: string): void {
    if (this.stopped || !this.o.leading()) return;
    this.o.nats.publish(subject, m);
    this.o.metrics?.routingMessages.inc({ subject });
  }

  /** Every registration, each read when its turn comes (one removed meanwhile is skipped, never resent). */
  private *live(): Generator<string> {
    for (const [pg, regs] of this.byLrp) {
      for (const key of [...regs.keys()]) {
        const m = this.byLrp.get(pg)?.get(key);
        if (m) yield m;
      }
    }
  }

  /** One step of the heartbeat: its share, so that every registration goes once per interval. */
  private beat(): void {
    if (this.endpoints === 0 || !this.o.nats.connected()) return;
    let n = Math.ceil((this.endpoints * this.tickMs) / (this.intervalS * 1000));
    while (n > 0) {
      this.cursor ??= this.live();
      const next = this.cursor.next();
      if (next.done) {
        this.cursor = undefined;
        // A round ended: start the next at the next step, not twice in one.
        return;
      }
      this.publish(REGISTER, next.value);
      n--;
    }
  }

  /** Everything, after a jitter of at most a fifth of the interval (and a second), as route-emitter. */
  private emitAllSoon(): void {
    if (this.stopped || this.emitTimer) return;
    const delay = this.random() * Math.min(1000, this.intervalS * 200);
    this.emitTimer = setTimeout(() => {
      this.emitTimer = undefined;
      void this.emitAll();
    }, delay);
    this.emitTimer.unref();
  }

  /** Sends every registration now, flushing every chunk; a call meanwhile runs once more after. */
  async emitAll(): Promise<void> {
    if (this.emitting) {
      this.emitAgain = true;
      return this.emitting;
    }
    this.emitting = (async () => {
      do {
        this.emitAgain = false;
        let sent = 0;
        for (const m of this.live()) {
          if (this.stopped || !this.o.leading()) return;
          this.publish(REGISTER, m);
          if (++sent % EMIT_CHUNK === 0) await this.o.nats.flush().catch(() => undefined);
        }
        await this.o.nats.flush().catch(() => undefined);
        this.o.logger.info({ registrations: sent }, 'routes sent to gorouter');
      } while (this.emitAgain && !this.stopped);
    })().finally(() => {
      this.emitting = undefined;
    });
    return this.emitting;
  }

  /** Asks the gorouters for their interval, once a second until one answers (at most 30 times). */
  private async greet(): Promise<void> {
    for (let attempt = 0; attempt < GREET_ATTEMPTS && !this.stopped; attempt++) {
      const started = Date.now();
      const replies = await this.o.nats.requestAll('router.greet', '{}', this.o.greetWindowMs ?? 1000);
      for (const r of replies) this.routerSaidHello(r, 'router.greet');
      if (replies.length > 0) return;
      const left = 1000 - (Date.now() - started);
      if (left > 0) await new Promise((r) => setTimeout(r, left).unref());
    }
    if (!this.stopped) {
      this.o.logger.warn(
        { intervalS: this.intervalS },
        'no gorouter answered router.greet: sending registrations at the default interval',
      );
    }
  }

  private routerSaidHello(body: string, subject: string): void {
    let hello: RouterHello;
    try {
      hello = JSON.parse(body) as RouterHello;
    } catch {
      this.o.logger.warn({ subject }, 'unreadable gorouter greeting');
      return;
    }
    const s = hello.minimumRegisterIntervalInSeconds;
    if (typeof s !== 'number' || !Number.isFinite(s) || s <= 0) return;
    const id = typeof hello.id === 'string' ? hello.id : '';
    this.routers.set(id, Math.min(60, Math.max(1, Math.floor(s))));
    const interval = Math.min(...this.routers.values());
    if (interval !== this.intervalS) {
      this.o.logger.info({ intervalS: interval, router: id, subject }, 'register interval');
      this.intervalS = interval;
      this.o.metrics?.routingRegisterInterval.set(interval);
    }
  }
}
