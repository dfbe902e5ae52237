/**
 * The route emitter at scale, against a real nats-server (Debian's) and a bare subscriber: a full
 * emission of 10,000 instances × 2 route ports (20,000 messages, what a takeover or a `router.start`
 * sends) against the floor of a bare client publishing the same messages; the emitter's heap for them
 * and its CPU over a register interval of keep-alive.
 */
import { spawn } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { connect } from '@nats-io/transport-node';
import { createLogger } from '@opi/logging';
import { freePort } from '@opi/router-rig';
import { type RouteSource, registrationsOf } from '@opi/translation';
import { DEFAULT_INTERVAL_S, RouteEmitter, connectNats } from '@opi/worker';
import { log, pollUntil, sleep } from './common.js';
import { quick } from './options.js';
import type { Row } from './report.js';

/** gorouter's pending-message limit per subscription (mbus/subscriber.go). */
const GOROUTER_BUFFER = 131_072;

const source = (n: number): RouteSource => ({
  ports: [
    [8080, [`app-${n}.example.com`]],
    [9090, [`metrics-${n}.example.com`]],
  ],
  desired: 1,
  app: `app-guid-${n}`,
  tags: { component: 'route-emitter', source_id: `app-guid-${n}`, app_name: `app-${n}`, process_type: 'web' },
});
const ip = (n: number) => `127.${10 + Math.floor(n / 65_025)}.${Math.floor(n / 255) % 255}.${(n % 255) + 1}`;

export async function routingEmission(): Promise<Row[]> {
  const instances = quick ? 2000 : 10_000;
  const messages = instances * 2;
  const port = await freePort();
  const server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  try {
    const url = `127.0.0.1:${port}`;
    const sub = await connect({
      servers: url,
      maxReconnectAttempts: 10,
      reconnectTimeWait: 100,
      waitOnFirstConnect: true,
    });
    let received = 0;
    sub.subscribe('router.register', {
      callback: () => {
        received++;
      },
    });
    await sub.flush();

    // Ours: the emitter over the worker's NATS adapter, holding every registration (its heap read here).
    const logger = createLogger({ level: 'silent', pretty: false });
    const nats = await connectNats({
      servers: [{ server: url }],
      tls: undefined,
      name: 'bench-emitter',
      logger,
    });
    await pollUntil(() => Promise.resolve(nats.connected()), 10_000);
    // A full collection on each side of the heap reading, without --expose-gc on the bench's command.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const emitter = new RouteEmitter({ nats, leading: () => true, logger });
    received = 0;
    for (let n = 0; n < instances; n++) {
      emitter.lrpRouted(`pg-${n}`, source(n), [{ ip: ip(n), uid: `uid-${n}`, index: 0 }]);
    }
    await nats.flush();
    await pollUntil(() => Promise.resolve(received >= messages), 30_000, 2);
    gc();
    const heap = process.memoryUsage().heapUsed - heapBefore;

    // Floor: a bare client publishing the same messages, flushed every 1,000 as the emitter does.
    const bodies = [...Array(instances).keys()].flatMap((n) => [
      ...registrationsOf(source(n), [{ ip: ip(n), uid: `uid-${n}`, index: 0 }]).values(),
    ]);
    const bare = await connect({ servers: url });
    const publishBare = async (): Promise<void> => {
      for (const [i, b] of bodies.entries()) {
        bare.publish('router.register', b);
        if ((i + 1) % 1000 === 0) await bare.flush();
      }
      await bare.flush();
    };
    /** Until the subscriber has every message of one emission. */
    const timed = async (emit: () => Promise<void>): Promise<number> => {
      received = 0;
      const t0 = performance.now();
      await emit();
      return (await pollUntil(() => Promise.resolve(received >= messages), 30_000, 2)) - t0;
    };
    // One uncounted round of each side, then three alternating rounds.
    await timed(publishBare);
    await timed(() => emitter.emitAll());
    const floors: number[] = [];
    const ours: number[] = [];
    for (let round = 0; round < 3; round++) {
      floors.push(await timed(publishBare));
      ours.push(await timed(() => emitter.emitAll()));
    }
    await bare.close();

    // Keep-alive: CPU over a share of the register interval (20 s, no gorouter answers here).
    const seconds = quick ? 4 : 10;
    emitter.start();
    received = 0;
    const cpu0 = process.cpuUsage();
    await sleep(seconds * 1000);
    const cpu = process.cpuUsage(cpu0);
    const cpuPercent = ((cpu.user + cpu.system) / 1000 / (seconds * 1000)) * 100;
    const perSecond = received / seconds;
    emitter.stop();
    await nats.close();
    await sub.close();

    const best = (xs: number[]) => Math.min(...xs);
    log(
      `routing: full emission of ${messages} in ${ours.map((x) => x.toFixed(0)).join('/')} ms (bare ${floors
        .map((x) => x.toFixed(0))
        .join(
          '/',
        )} ms); keep-alive ${perSecond.toFixed(0)} msg/s at ${cpuPercent.toFixed(1)} % CPU; heap ${(heap / 1e6).toFixed(1)} MB`,
    );
    const size = `${instances} instances × 2 ports`;
    return [
      {
        scenario: 'routing: full emission',
        size,
        metric: `${messages} router.register seen by a subscriber (best of 3, alternating)`,
        ours: best(ours),
        baseline: best(floors),
        unit: 'ms',
        ratio: best(ours) / best(floors),
        ratioMeaning: '× the bare publish',
        target: '≤ 5 s',
        met: best(ours) <= 5000,
        note: `largest burst ${messages} messages, under gorouter's ${GOROUTER_BUFFER} pending`,
      },
      {
        scenario: 'routing: keep-alive CPU',
        size,
        metric: `CPU of the emitter's process while re-registering (${DEFAULT_INTERVAL_S} s interval, ${perSecond.toFixed(0)} msg/s)`,
        ours: cpuPercent,
        baseline: 100,
        unit: '%',
        ratio: cpuPercent / 100,
        ratioMeaning: ' of a core',
        target: 'recorded',
        met: undefined,
      },
      {
        scenario: 'routing: emitter heap',
        size,
        metric: 'heap held for the registrations',
        ours: heap,
        baseline: heap / instances,
        unit: 'B',
        ratio: heap / instances,
        ratioMeaning: ' B per instance',
        target: 'recorded',
        met: undefined,
      },
    ];
  } finally {
    server.kill('SIGTERM');
  }
}
