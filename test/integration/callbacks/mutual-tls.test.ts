/**
 * CallbackClient over https with mutual TLS (certificates made by openssl): the client certificate CC
 * sees, handshakes refused without one or with another CA's, CC's CA untrusted, and unusable key pairs.
 */
import { readFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  CallbackClient,
  CallbackTlsError,
  CallbackUnavailableError,
  loadTls,
  taskCompletedBody,
} from '@opi/callbacks';
import { eventually } from '../../support/eventually.js';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import { type Pki, haveOpenssl, makePki } from '../../support/pki.js';
import { guid, taskCompletion, taskUrl, thrown } from './calls.js';

const openssl = haveOpenssl();
if (!openssl) console.warn('openssl not found: skipping the mutual TLS callback tests');

(openssl ? describe : describe.skip)('CallbackClient over https with mutual TLS', () => {
  let pki: Pki;
  let cc: FakeCc;
  const clients: CallbackClient[] = [];
  const clientWith = (tls: Parameters<typeof loadTls>[0]) => {
    const c = new CallbackClient({ tls: loadTls(tls), timeoutMs: 3_000 });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    pki = makePki();
    cc = await startFakeCc({
      tls: {
        cert: readFileSync(pki.file('server.crt')),
        key: readFileSync(pki.file('server.key')),
        ca: readFileSync(pki.file('ca.crt')),
      },
    });
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await cc.close();
    rmSync(pki.dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    cc.reset();
  });

  it('delivers with the client certificate, which CC sees', async () => {
    const client = clientWith({
      caFile: pki.file('ca.crt'),
      certFile: pki.file('opi-worker.crt'),
      keyFile: pki.file('opi-worker.key'),
    });
    const g = guid();
    await expect(
      client.postJson(taskUrl(cc.url, g), taskCompletedBody(g, { failed: false, failureReason: '' })),
    ).resolves.toStrictEqual({
      kind: 'delivered',
      status: 200,
    });
    expect(cc.calls).toHaveLength(1);
    expect(cc.calls[0]).toMatchObject({
      clientCert: true,
      clientCertSubject: 'opi-worker',
      body: { task_guid: g },
    });
  });

  it.each<[string, () => Parameters<typeof loadTls>[0]]>([
    ['no client certificate', () => ({ caFile: pki.file('ca.crt') })],
    [
      'a client certificate from another CA',
      () => ({
        caFile: pki.file('ca.crt'),
        certFile: pki.file('intruder.crt'),
        keyFile: pki.file('intruder.key'),
      }),
    ],
  ])('a client with %s is refused in the handshake: unavailable', async (_name, tls) => {
    const e = await thrown(clientWith(tls()).postJson(...taskCompletion(cc.url)));
    expect(e).toBeInstanceOf(CallbackUnavailableError);
    expect((e as CallbackUnavailableError).code).toBeDefined();
    expect((e as CallbackUnavailableError).status).toBeUndefined();
    expect(cc.calls).toHaveLength(0);
    await eventually(async () => cc.refusedHandshakes > 0, 'the fake CC to refuse the handshake');
  });

  it("a client that does not trust CC's CA is unavailable, naming the verification failure", async () => {
    const client = clientWith({ certFile: pki.file('opi-worker.crt'), keyFile: pki.file('opi-worker.key') });
    const e = await thrown(client.postJson(...taskCompletion(cc.url)));
    expect(e).toBeInstanceOf(CallbackUnavailableError);
    expect((e as CallbackUnavailableError).code).toMatch(/UNABLE_TO_VERIFY|SELF_SIGNED|UNABLE_TO_GET_ISSUER/);
    expect(cc.calls).toHaveLength(0);
  });

  it('insecureSkipVerify still presents the client certificate', async () => {
    const client = clientWith({
      insecureSkipVerify: true,
      certFile: pki.file('opi-worker.crt'),
      keyFile: pki.file('opi-worker.key'),
    });
    await expect(client.postJson(...taskCompletion(cc.url))).resolves.toMatchObject({ kind: 'delivered' });
    expect(cc.calls[0]).toMatchObject({ clientCert: true });
  });

  it('CC down and up again over TLS: unavailable, then delivered', async () => {
    const client = clientWith({
      caFile: pki.file('ca.crt'),
      certFile: pki.file('opi-worker.crt'),
      keyFile: pki.file('opi-worker.key'),
    });
    const [url, body] = taskCompletion(cc.url);
    await expect(client.postJson(url, body)).resolves.toMatchObject({ kind: 'delivered' });
    await cc.down();
    try {
      await expect(client.postJson(url, body)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      await cc.up();
    }
    await expect(client.postJson(url, body)).resolves.toMatchObject({ kind: 'delivered' });
  });

  it('loadTls refuses a certificate with the wrong key, naming the files', () => {
    const load = () => loadTls({ certFile: pki.file('opi-worker.crt'), keyFile: pki.file('server.key') });
    expect(load).toThrow(CallbackTlsError);
    expect(load).toThrow(/opi-worker\.crt.*server\.key.* are not usable/);
  });
});
