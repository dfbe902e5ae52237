/**
 * The API's refusal to listen openly without authentication (in-process and as `npm run start:api`), where
 * it may start, and settings refused when half configured.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { parseSettings } from '@opi/config';
import { InsecureListenError, startApi } from '../../../apps/api/src/index.js';
import { TOKENS, silent, useSecureApis } from '../../support/secure-api.js';

const { settingsFor, api } = useSecureApis();

describe('listening without authentication', () => {
  it('refuses to start on 0.0.0.0 without tokens, mutual TLS or OPI_ALLOW_INSECURE', async () => {
    const settings = settingsFor({ HOST: '0.0.0.0' });
    await expect(startApi(settings, silent)).rejects.toThrow(InsecureListenError);
    await expect(startApi(settings, silent)).rejects.toThrow(
      /refusing to listen on 0\.0\.0\.0 without authentication.*OPI_API_TOKENS.*OPI_ALLOW_INSECURE=true/s,
    );
  });

  it('starts on 0.0.0.0 with OPI_ALLOW_INSECURE, or with tokens, and on loopback without either', async () => {
    const envs: Record<string, string>[] = [
      { HOST: '0.0.0.0', OPI_ALLOW_INSECURE: 'true' },
      { HOST: '0.0.0.0', OPI_API_TOKENS: TOKENS[0] ?? '' },
      { HOST: '127.0.0.1' },
      { HOST: '::1' },
    ];
    for (const env of envs) {
      const a = await api(env);
      expect(a.port).toBeGreaterThan(0);
    }
  });

  it('makes `npm run start:api` exit 1 with the message, before it touches Redis', async () => {
    const main = join(process.cwd(), 'apps/api/dist/main.js');
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      execFile(
        process.execPath,
        [main],
        {
          env: {
            PATH: process.env['PATH'] ?? '',
            HOST: '0.0.0.0',
            PORT: '0',
            // Nothing listens there: reaching Redis first would hang, not exit.
            REDIS_URL: 'redis://127.0.0.1:1',
          },
          timeout: 20_000,
        },
        (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, out: `${stdout}${stderr}` });
        },
      );
    });
    expect(result.code).toBe(1);
    expect(result.out).toContain('refusing to listen on 0.0.0.0 without authentication');
  });

  it('refuses half-configured TLS and dashboard settings', () => {
    expect(() => parseSettings({ OPI_TLS_CERT_FILE: '/x.crt' })).toThrow(/OPI_TLS_KEY_FILE/);
    expect(() => parseSettings({ OPI_TLS_CLIENT_CA_FILE: '/ca.crt' })).toThrow(/OPI_TLS_CERT_FILE/);
    expect(() => parseSettings({ OPI_DASHBOARD_USERNAME: 'ops' })).toThrow(/OPI_DASHBOARD_PASSWORD/);
    expect(() => parseSettings({ OPI_API_TOKENS: 'a, b' })).toThrow(/OPI_API_TOKENS/);
  });
});
