/**
 * Registry credentials of a staging: sent to the registry as Basic, absent from the callback CC hears,
 * error bodies, BullMQ's jobs, the dashboard and the logs.
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { eventually } from '../../support/eventually.js';
import { useRegistryService } from '../../support/registry-service.js';
import { useSecureApis } from '../../support/secure-api.js';

const secure = useSecureApis();

describe('registry passwords', () => {
  const { PASSWORD, leaks, lines, send, docker, allJobsText, dashboardText } = useRegistryService(secure);

  it('staging with registry credentials: used against the registry, absent from logs, jobs, the dashboard, callbacks and error bodies', async () => {
    // A registry that asks for Basic credentials and refuses them, and CC's staging callback.
    const authorizations: string[] = [];
    const callbacks: string[] = [];
    const server = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (req.url?.startsWith('/v2/')) {
          authorizations.push(req.headers.authorization ?? '');
          res.writeHead(401, {
            'www-authenticate': 'Basic realm="test registry"',
            'content-type': 'application/json',
          });
          res.end(JSON.stringify({ errors: [{ code: 'UNAUTHORIZED', message: 'authentication required' }] }));
          return;
        }
        callbacks.push(body);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const stagingGuid = `staging-${randomUUID().slice(0, 8)}`;
      const staging = (extra: Record<string, unknown> = {}): string =>
        JSON.stringify({
          app_guid: 'app-1',
          completion_callback: `http://127.0.0.1:${port}/staging/${stagingGuid}`,
          lifecycle: docker(`127.0.0.1:${port}/team/app:1`),
          ...extra,
        });
      expect((await send('POST', `/stage/${stagingGuid}`, staging())).status).toBe(202);
      await eventually(async () => Promise.resolve(callbacks.length > 0), 'the staging callback', 30_000);
      // The credentials went to the registry (as Basic), and the failure CC heard does not repeat them.
      expect(authorizations).toContain(`Basic ${Buffer.from(`robot:${PASSWORD}`).toString('base64')}`);
      const reported = JSON.parse(callbacks[0] ?? '{}') as { error?: { id: string; message: string } };
      expect(reported.error).toEqual({ id: 'StagingError', message: expect.stringMatching(/denied/) });
      expect(leaks(callbacks.join('\n'))).toEqual([]);

      const refused = [
        await send('POST', `/stage/${stagingGuid}-2`, staging({ completion_callback: 'not a url' })),
        await send('POST', `/stage/${stagingGuid}-3`, staging({ memory_mb: 'lots' })),
        await send('POST', `/stage/other-guid`, staging({ staging_guid: stagingGuid })),
        await send(
          'POST',
          `/stage/${stagingGuid}-4`,
          `{"lifecycle": {"docker_lifecycle": {"registry_password": ${PASSWORD}}}}`,
        ),
      ];
      for (const r of refused) {
        expect(r.status).toBe(400);
        expect(JSON.parse(r.text)).toEqual({ message: expect.any(String) });
        expect(leaks(r.text)).toEqual([]);
      }
      expect(leaks(await allJobsText())).toEqual([]);
      const shown = await dashboardText();
      expect(shown).toContain(stagingGuid);
      expect(leaks(shown)).toEqual([]);
      const log = lines.join('');
      expect(log).toContain(stagingGuid);
      expect(leaks(log)).toEqual([]);
    } finally {
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    }
  });
});
