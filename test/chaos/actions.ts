/**
 * Carries out a seeded run's chaos actions: worker SIGKILLs (and their replacements), Redis SIGKILLed and
 * restarted from its AOF or flushed, the cluster's faults and cut watches, and CC's callback endpoint down.
 */
import type { Simulator } from '@opi/kube-sim';
import type { FakeCc } from '../support/fake-cc.js';
import { sleep } from './http.js';
import type { ChaosAction } from './plan.js';
import { type ServiceProcess, alive, kill } from './processes.js';
import type { PrivateRedis } from './redis-server.js';

/** What the chaos did, for the report. */
export interface ChaosStats {
  workerKills: number;
  redisRestarts: number;
  redisFlushes: number;
  ccDownMs: number;
  passes: number;
  aofLost: number;
}

/** What the actions act on. */
export interface ChaosTargets {
  readonly workers: readonly ServiceProcess[];
  addWorker: () => void;
  /** Whether the chaos is over: a SIGKILLed worker is not replaced then. */
  stopped: () => boolean;
  /** When each worker SIGKILL was sent. */
  readonly killedAt: number[];
  readonly stats: ChaosStats;
  readonly redis: PrivateRedis;
  readonly sim: Simulator;
  readonly cc: FakeCc;
  say: (line: string) => void;
}

/** A function that carries out one action; the Redis actions run one after another. */
export function executor(t: ChaosTargets): (a: ChaosAction) => Promise<void> {
  let redisChain = Promise.resolve();
  const onRedis = (fn: () => Promise<void>) => {
    const p = redisChain.then(fn, fn);
    redisChain = p.catch(() => undefined);
    return p;
  };
  return async (a: ChaosAction): Promise<void> => {
    switch (a.kind) {
      case 'kill-worker': {
        const live = t.workers.filter(alive);
        const victim = live[Math.floor(a.pick * live.length)];
        if (!victim) return;
        t.killedAt.push(Date.now());
        await kill(victim);
        t.stats.workerKills++;
        t.say(`SIGKILL ${victim.name}`);
        await sleep(a.respawnAfterMs);
        if (!t.stopped()) t.addWorker();
        return;
      }
      case 'redis-restart':
        return onRedis(async () => {
          // A canary written just before the kill must come back from the AOF.
          const canary = `chaos-canary-${t.stats.redisRestarts}`;
          await t.redis.withClient((c) => c.set(canary, 'alive'));
          await t.redis.kill();
          t.say(`redis SIGKILLed, down ${Math.round(a.downMs)} ms`);
          await sleep(a.downMs);
          await t.redis.start();
          t.stats.redisRestarts++;
          if ((await t.redis.withClient((c) => c.get(canary))) !== 'alive') t.stats.aofLost++;
        });
      case 'redis-flush':
        return onRedis(async () => {
          await t.redis.flushAll();
          t.stats.redisFlushes++;
          t.say('redis FLUSHALL');
        });
      case 'faults':
        t.sim.faults.reset();
        t.sim.faults.set(a.config);
        t.say(`cluster faults: ${a.label}`);
        return;
      case 'cut-watches':
        t.say(`cut ${t.sim.faults.cutWatches()} watches`);
        return;
      case 'cc-down': {
        t.say(`CC down for ${a.ms} ms (refusing, then 503)`);
        const t0 = Date.now();
        await t.cc.down();
        await sleep(a.ms * 0.6);
        await t.cc.up();
        t.cc.answer(503, { body: { description: 'unavailable' } });
        await sleep(a.ms * 0.4);
        t.cc.answer();
        t.stats.ccDownMs += Date.now() - t0;
        t.say('CC back');
        return;
      }
    }
  };
}
