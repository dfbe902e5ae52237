/**
 * Wires the log agent: the kubelet's CRI files on this node tailed (@opi/node-logs), each pod's origin
 * looked up (origins.ts), envelopes sent over one BatchSender stream (@opi/loggregator), and /metrics,
 * /healthz and /readyz for the DaemonSet's probes and Prometheus.
 */
import type { Settings } from '@opi/config';
import { ClientNodeKubernetes, type KubeConnection } from '@opi/kube';
import type { Logger } from '@opi/logging';
import { LoggregatorSender } from '@opi/loggregator';
import { LogTailer } from '@opi/node-logs';
import { createRedis } from '@opi/queue';
import { closeServer } from '@opi/runtime';
import { loadTlsFiles } from '@opi/runtime/tls-files';
import { StateStore, TaskStore } from '@opi/state';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { LogOrigins } from './origins.js';
import { LogShipper } from './shipper.js';

export class LogAgentSettingsError extends Error {}

export interface RunningLogAgent {
  sender: LoggregatorSender;
  tailer: LogTailer;
  metricsPort: number | undefined;
  registry: Registry;
  close(): Promise<void>;
}

export interface StartLogAgentOptions {
  /** Where /metrics, /healthz and /readyz are served (port 0: any); false: not at all. */
  metricsServer?: { port: number; host: string } | false;
  pollMs?: number;
  firstStart?: 'end' | 'head';
}

export async function startLogAgent(
  settings: Settings,
  logger: Logger,
  cluster: KubeConnection,
  options: StartLogAgentOptions = {},
): Promise<RunningLogAgent> {
  const lg = settings.loggregator;
  if (!lg)
    throw new LogAgentSettingsError('the log agent needs OPI_LOGGREGATOR_ADDR: where to send the lines');
  const tls = loadTlsFiles(
    { label: 'Loggregator TLS', error: (message) => new LogAgentSettingsError(message) },
    lg.tls,
  );
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'opi_log_agent_' });
  const lines = new Counter({
    name: 'opi_log_lines_total',
    help: 'Container log lines read, by outcome: shipped, unmanaged (a pod not of this service), dropped',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const sent = new Counter({
    name: 'opi_loggregator_envelopes_sent_total',
    help: 'Envelopes handed to the Loggregator stream, by kind',
    labelNames: ['kind'],
    registers: [registry],
  });
  const dropped = new Counter({
    name: 'opi_loggregator_envelopes_dropped_total',
    help: 'Envelopes dropped (oldest first) because the buffer was full while Loggregator was away or slow',
    registers: [registry],
  });
  const streamUp = new Gauge({
    name: 'opi_loggregator_stream_up',
    help: '1 while the BatchSender stream to Loggregator is open',
    registers: [registry],
  });
  const sender = new LoggregatorSender({
    address: `${lg.address.host}:${lg.address.port}`,
    tls,
    serverName: lg.serverName,
    maxBuffered: lg.maxBuffered,
    observer: {
      sent: (kind, n) => {
        sent.inc({ kind }, n);
      },
      dropped: (n) => {
        dropped.inc(n);
      },
      state: (state, reason) => {
        streamUp.set(state === 'connected' ? 1 : 0);
        if (state === 'down') logger.warn({ reason }, 'Loggregator stream down: reconnecting');
        else logger.info({ state }, 'Loggregator stream');
      },
    },
  });
  const kube = new ClientNodeKubernetes(cluster, {
    requestTimeoutMs: settings.kube.timeoutMs,
    maxConcurrentRequests: settings.kube.maxConcurrentRequests,
  });
  const redis = createRedis(settings.redis);
  redis.on('error', (err: Error) => {
    logger.warn({ err: err.message }, 'redis connection error (log agent)');
  });
  const origins = new LogOrigins({
    getPod: (namespace, name) => kube.pods.get(namespace, name),
    store: new StateStore(redis, settings.queuePrefix),
    tasks: new TaskStore(redis, settings.queuePrefix),
  });
  const shipper = new LogShipper({
    origins,
    send: (e) => {
      sender.send(e);
    },
    counted: (outcome, n) => {
      lines.inc({ outcome }, n);
    },
  });
  const tailer = new LogTailer({
    root: settings.nodeLogs.dir,
    positionsFile: settings.nodeLogs.positionsFile,
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
    ...(options.firstStart ? { firstStart: options.firstStart } : {}),
    onLine: (file, line) => {
      shipper.line(file, line);
    },
    onPodGone: (uid) => {
      shipper.forget(uid);
    },
    onError: (e) => {
      logger.warn({ err: (e as Error).message }, 'reading pod logs failed');
    },
  });
  new Gauge({
    name: 'opi_log_agent_files',
    help: 'Container log files followed',
    registers: [registry],
    collect() {
      this.set(tailer.files);
    },
  });
  const retry = setInterval(() => {
    shipper.retry();
  }, 1000);
  retry.unref();
  await tailer.start();

  const listen =
    options.metricsServer ??
    (settings.metrics.port === 0 ? false : { port: settings.metrics.port, host: settings.http.host });
  const server = listen
    ? createServer((req, res) => {
        if (req.url === '/metrics') {
          void registry.metrics().then((text) => {
            res.writeHead(200, { 'Content-Type': registry.contentType }).end(text);
          });
        } else if (req.url === '/healthz') {
          res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"ok"}');
        } else if (req.url === '/readyz') {
          // A Loggregator that cannot be reached degrades the agent, it does not make it unready: lines
          // keep being read and buffered, and restarting the pod would not bring Loggregator back.
          const down = sender.downReason;
          const body = {
            status: down ? 'degraded' : 'ok',
            loggregator: down ? `unreachable: ${down}` : sender.state,
            files: tailer.files,
          };
          res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
        } else {
          res.writeHead(404).end();
        }
      })
    : undefined;
  if (server && listen) {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listen.port, listen.host, resolve);
    });
  }
  logger.info(
    {
      node: settings.nodeLogs.nodeName,
      dir: settings.nodeLogs.dir,
      loggregator: `${lg.address.host}:${lg.address.port}`,
    },
    'log agent started',
  );
  return {
    sender,
    tailer,
    registry,
    metricsPort: server ? (server.address() as AddressInfo).port : undefined,
    close: async () => {
      clearInterval(retry);
      await tailer.stop();
      await sender.close();
      if (server) await closeServer(server, 'all');
      redis.disconnect();
      kube.close();
    },
  };
}
