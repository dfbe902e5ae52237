import { type Envelope, LoggregatorSender, type SenderState } from '@opi/loggregator';
import { eventually } from '../../support/eventually.js';
import { type FakeIngress, startFakeIngress } from '../../support/loggregator-ingress.js';
import { haveOpenssl, makePki, type Pki } from '../../support/pki.js';

const maybe = haveOpenssl() ? describe : describe.skip;

/** Retries an assertion until it holds (eventually's deadline), failing with its last message. */
const holds = (assert: () => void, timeoutMs?: number): Promise<boolean> =>
  eventually(
    () => {
      assert();
      return Promise.resolve(true);
    },
    'the assertion',
    timeoutMs,
  );

const log = (n: number, type: 'OUT' | 'ERR' = 'OUT'): Envelope => ({
  timestampNs: 1_765_000_000_123_456_789n + BigInt(n),
  sourceId: 'app-guid',
  instanceId: String(n % 2),
  tags: { source_type: 'APP/PROC/WEB', app_name: 'dora' },
  log: { payload: Buffer.from(`line ${n}`), type },
});

maybe('LoggregatorSender against a v2 ingress with mutual TLS', () => {
  let pki: Pki;
  let ingress: FakeIngress;
  const senders: LoggregatorSender[] = [];
  const sender = (over: Partial<ConstructorParameters<typeof LoggregatorSender>[0]> = {}) => {
    const s = new LoggregatorSender({
      address: `127.0.0.1:${ingress.port}`,
      tls: { ca: pki.ca, cert: pki.read('opi-worker.crt'), key: pki.read('opi-worker.key') },
      backoff: { initialMs: 50, maxMs: 200 },
      ...over,
    });
    senders.push(s);
    return s;
  };

  beforeAll(async () => {
    pki = makePki();
    ingress = await startFakeIngress(pki);
  });
  afterEach(async () => {
    await Promise.all(senders.splice(0).map((s) => s.close(100)));
    ingress.received.length = 0;
  });
  afterAll(() => ingress.stop());

  it('sends logs and gauges in batches over BatchSender, nanoseconds and tags intact', async () => {
    const sent: Record<string, number> = {};
    const s = sender({ observer: { sent: (k, n) => (sent[k] = (sent[k] ?? 0) + n) } });
    for (let n = 0; n < 250; n++) s.send(log(n, n % 3 === 0 ? 'ERR' : 'OUT'));
    s.send({
      timestampNs: 1_765_000_001_000_000_001n,
      sourceId: 'process-guid',
      instanceId: '1',
      tags: {},
      gauge: { cpu: { unit: 'percentage', value: 12.5 }, memory: { unit: 'bytes', value: 1024 } },
    });
    await holds(() => {
      expect(ingress.received).toHaveLength(251);
    });
    const first = ingress.received[0];
    expect(first).toMatchObject({
      timestamp: '1765000000123456789',
      source_id: 'app-guid',
      instance_id: '0',
      tags: { source_type: 'APP/PROC/WEB', app_name: 'dora' },
      log: { type: 'ERR' },
    });
    expect(first?.log?.payload.toString()).toBe('line 0');
    expect(ingress.received[1]?.log?.type ?? 'OUT').toBe('OUT'); // proto3 leaves the default out
    expect(ingress.received[250]).toMatchObject({
      timestamp: '1765000001000000001',
      gauge: {
        metrics: { cpu: { unit: 'percentage', value: 12.5 }, memory: { unit: 'bytes', value: 1024 } },
      },
    });
    expect(sent).toEqual({ log: 250, gauge: 1 });
    expect(ingress.streamsOpened).toBeGreaterThanOrEqual(1);
  });

  it('opens the stream again after the server cuts it, and goes on in order', async () => {
    const states: SenderState[] = [];
    const s = sender({ observer: { state: (st) => states.push(st) } });
    await holds(() => {
      expect(s.state).toBe('connected');
    });
    const before = ingress.streamsOpened - 1;
    let n = 0;
    for (let cut = 0; cut < 5; cut++) {
      for (let i = 0; i < 20; i++) s.send(log(n++));
      const upTo = n;
      await holds(() => {
        expect(ingress.received.length).toBeGreaterThanOrEqual(upTo);
      });
      ingress.cutStreams();
      await holds(() => {
        expect(ingress.streamsOpened - before).toBe(cut + 2);
      });
      await holds(() => {
        expect(s.state).toBe('connected');
      });
    }
    expect(ingress.streamsOpened - before).toBe(6);
    expect(states.filter((st) => st === 'down').length).toBe(5);
    const lines = ingress.received.map((e) => e.log?.payload.toString());
    expect(lines).toEqual(Array.from({ length: n }, (_, i) => `line ${i}`));
  });

  it('holds at most maxBuffered while the server is away, dropping the oldest, then sends the rest', async () => {
    await ingress.stop();
    let dropped = 0;
    const s = sender({ maxBuffered: 50, observer: { dropped: (c) => (dropped += c) } });
    for (let n = 0; n < 200; n++) s.send(log(n));
    expect(s.buffered).toBe(50);
    expect(dropped).toBe(150);
    await holds(() => {
      expect(s.state).toBe('down');
    });
    expect(s.downReason).toBeDefined();
    await ingress.start();
    await holds(() => {
      expect(ingress.received).toHaveLength(50);
    }, 10_000);
    expect(ingress.received[0]?.log?.payload.toString()).toBe('line 150');
  });

  it('is refused by a server that does not trust its certificate', async () => {
    const s = sender({ tls: { ca: pki.ca, cert: pki.read('intruder.crt'), key: pki.read('intruder.key') } });
    s.send(log(1));
    await holds(() => {
      expect(s.state).toBe('down');
    });
    expect(ingress.received).toHaveLength(0);
  });

  it('checks the server certificate against the configured name (metron by default)', async () => {
    const s = sender({ serverName: 'doppler.example' });
    s.send(log(1));
    await holds(() => {
      expect(s.state).toBe('down');
    });
    expect(ingress.received).toHaveLength(0);
  });
});
