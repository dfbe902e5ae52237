/**
 * An app whose health check never passes, through the API, a worker and the simulated kubelet's probe
 * kill: CC hears Diego's words for it, not a bare exit 137, in a body CC takes (the stand-in CC fails the
 * test otherwise).
 */
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import { desire, lrp } from '../cluster-cache/lrps.js';
import { HOUR_MS } from '../cluster-cache/queues.js';
import { type Service, eventually, startService } from '../../support/service.js';

describe('a crash caused by the health check', () => {
  let cc: FakeCc;
  let s: Service;
  beforeAll(async () => {
    cc = await startFakeCc();
    s = await startService({
      env: { OPI_RESYNC_INTERVAL_MS: HOUR_MS, CC_INTERNAL_URL: cc.url, OPI_CALLBACK_BACKOFF_MS: '500' },
    });
  });
  afterAll(async () => {
    await s.close();
    await cc.close();
  });

  it('is said as Diego says a health check that never passed', async () => {
    const a = lrp(1, 'neverhealthy');
    await desire(s, a, {
      ports: [8080],
      health_check_type: 'port',
      health_check_timeout_ms: 4000,
      environment: { KUBESIM_BEHAVIOUR: 'never-healthy', KUBESIM_RUN_MS: '300' },
    });
    const described = await eventually(async () => {
      const bodies = cc
        .callsTo(`/internal/v4/apps/${a.pg}/crashed`)
        .map((c) => c.body as { exit_status: number; exit_description: string });
      return bodies.length > 0 ? bodies : undefined;
    }, 'a crash report');
    expect(described[0]).toMatchObject({
      exit_status: 137,
      exit_description:
        'APP/PROC/WEB: Instance never healthy after 4s: Failed to make TCP connection to port 8080: connection refused',
    });
  }, 60_000);
});
