/**
 * Mutual TLS with certificates made by openssl: CC's client certificate served without a token, handshakes
 * refused without one, with another CA's or an expired one, per-certificate rate limits, and the admin port.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { desireBody } from '@opi/contract/testing';
import { type Pki, httpsGet, makePki } from '../../support/pki.js';
import { DASH, basic, get, useSecureApis } from '../../support/secure-api.js';

const { api } = useSecureApis();

describe('mutual TLS', () => {
  let pki: Pki;
  let port: number;
  let adminPort: number;

  beforeAll(async () => {
    pki = makePki();
    const a = await api({
      OPI_TLS_CERT_FILE: pki.file('server.crt'),
      OPI_TLS_KEY_FILE: pki.file('server.key'),
      OPI_TLS_CLIENT_CA_FILE: pki.file('ca.crt'),
      OPI_ADMIN_PORT: '0',
      OPI_DASHBOARD_USERNAME: DASH.user,
      OPI_DASHBOARD_PASSWORD: DASH.password,
    });
    port = a.port;
    adminPort = a.admin?.port ?? 0;
  });

  afterAll(() => {
    rmSync(pki.dir, { recursive: true, force: true });
  });

  it("serves a client presenting a certificate of the client CA, as CC's OPI client does", async () => {
    const res = await httpsGet(port, '/apps', {
      ca: pki.ca,
      cert: pki.read('cloud-controller.crt'),
      key: pki.read('cloud-controller.key'),
    });
    expect(res).toEqual({ status: 200, text: '{"desired_lrp_scheduling_infos":[]}' });
  });

  it('takes a desire, a task and reads from a client with a certificate and no token, as CC sends them', async () => {
    const cc = { ca: pki.ca, cert: pki.read('cloud-controller.crt'), key: pki.read('cloud-controller.key') };
    // Ruby's HTTPClient sends its string bodies as a form; the API reads any body as JSON.
    const as = (method: string, body?: unknown) => ({
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
    });
    const guid = randomUUID();
    const version = randomUUID();
    const desire = desireBody(guid, version, {
      health_check_http_endpoint: null,
      lifecycle: {
        docker_lifecycle: { command: [], image: 'nginx', registry_username: null, registry_password: null },
      },
    });
    expect((await httpsGet(port, `/apps/${guid}-${version}`, cc, as('PUT', desire))).status).toBe(202);
    const infos = JSON.parse((await httpsGet(port, '/apps', cc)).text) as {
      desired_lrp_scheduling_infos: { desired_lrp_key: { process_guid: string } }[];
    };
    expect(infos.desired_lrp_scheduling_infos.map((i) => i.desired_lrp_key.process_guid)).toContain(
      `${guid}-${version}`,
    );
    const task = randomUUID();
    const refused = await httpsGet(
      port,
      `/tasks/${task}`,
      cc,
      as('POST', { name: 't', completion_callback: 'not a url', lifecycle: {} }),
    );
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text)).toEqual({ message: expect.stringContaining('completion_callback') });
  });

  it('fails the handshake of a client without a certificate', async () => {
    await expect(httpsGet(port, '/apps', { ca: pki.ca })).rejects.toThrow(
      /certificate required|ECONNRESET|socket hang up|handshake/i,
    );
  });

  it('fails the handshake of a client whose certificate another CA signed', async () => {
    await expect(
      httpsGet(port, '/apps', { ca: pki.ca, cert: pki.read('intruder.crt'), key: pki.read('intruder.key') }),
    ).rejects.toThrow(/unknown ca|certificate|ECONNRESET|socket hang up/i);
  });

  it('fails the handshake of a client whose certificate of the right CA has expired', async () => {
    await expect(
      httpsGet(port, '/apps', { ca: pki.ca, cert: pki.read('expired.crt'), key: pki.read('expired.key') }),
    ).rejects.toThrow(/expired|certificate|ECONNRESET|socket hang up/i);
  });

  it('rate-limits each client certificate on its own', async () => {
    const limited = await api({
      OPI_TLS_CERT_FILE: pki.file('server.crt'),
      OPI_TLS_KEY_FILE: pki.file('server.key'),
      OPI_TLS_CLIENT_CA_FILE: pki.file('ca.crt'),
      OPI_RATE_LIMIT_PER_MINUTE: '2',
    });
    const as = (name: string) => ({
      ca: pki.ca,
      cert: pki.read(`${name}.crt`),
      key: pki.read(`${name}.key`),
    });
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await httpsGet(limited.port, '/apps', as('cloud-controller'))).status);
    expect(statuses).toEqual([200, 200, 429]);
    // Another certificate is another client, though it connects from the same address.
    expect((await httpsGet(limited.port, '/apps', as('cloud-controller-2'))).status).toBe(200);
  });

  it('does not answer plain http on the API port', async () => {
    await expect(fetch(`http://127.0.0.1:${port}/apps`)).rejects.toThrow();
  });

  it('serves probes, metrics and the dashboard on the admin port, without a client certificate', async () => {
    const admin = `http://127.0.0.1:${adminPort}`;
    expect((await get(`${admin}/healthz`)).status).toBe(200);
    expect((await get(`${admin}/metrics`)).status).toBe(200);
    expect((await get(`${admin}/admin/queues`)).status).toBe(401);
    expect(
      (await get(`${admin}/admin/queues`, { authorization: basic(DASH.user, DASH.password) })).status,
    ).toBe(200);
    // CC's routes are not there, and the operator endpoints are not on the API port.
    expect((await get(`${admin}/apps`)).status).toBe(404);
    const cc = { ca: pki.ca, cert: pki.read('cloud-controller.crt'), key: pki.read('cloud-controller.key') };
    expect((await httpsGet(port, '/healthz', cc)).status).toBe(404);
    expect((await httpsGet(port, '/admin/queues', cc)).status).toBe(404);
  });
});
