/**
 * Crash reports end to end: the API, Redis, a worker and the simulated cluster, with a stand-in CC that
 * checks each report: one per crash of a crash-looping app with a rising crash_count, and an OOM kill and
 * an image that cannot be pulled said in Diego's words.
 */
import { desireBody, uuid } from '@opi/contract/testing';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import { type Service, call, eventually, startService } from '../../support/service.js';

describe('crash reports', () => {
  let cc: FakeCc;
  let s: Service;
  beforeAll(async () => {
    cc = await startFakeCc();
    s = await startService({ workers: 1, env: { CC_INTERNAL_URL: cc.url } });
  });
  afterAll(async () => {
    await s.close();
    await cc.close();
  });

  it('sends one report per crash of a crash-looping app, with a rising crash_count', async () => {
    const g = uuid(1, 'crash');
    const v = uuid(1, 'v1');
    const pg = `${g}-${v}`;
    await call(
      s.base,
      'PUT',
      `/apps/${pg}`,
      desireBody(g, v, {
        environment: { KUBESIM_BEHAVIOUR: 'crash', KUBESIM_EXIT_CODE: '7', KUBESIM_RUN_MS: '100' },
      }),
    );
    const reports = await eventually(
      async () => {
        const r = cc.callsTo(`/internal/v4/apps/${pg}/crashed`).map(
          (c) =>
            c.body as {
              crash_count: number;
              exit_status: number;
              exit_description: string;
              reason: string;
              index: number;
              instance: string;
              crash_timestamp: number;
            },
        );
        return r.length >= 3 ? r : undefined;
      },
      'three crash reports',
      90_000,
    );
    const counts = reports.map((r) => r.crash_count);
    expect(new Set(counts).size).toBe(counts.length);
    expect([...counts].sort((a, b) => a - b)).toEqual(counts.slice().sort((a, b) => a - b));
    // As Diego's tps-watcher says it: the state, the executor's words, nanoseconds.
    expect(reports[0]).toMatchObject({
      exit_status: 7,
      reason: 'CRASHED',
      exit_description: 'APP/PROC/WEB: Exited with status 7',
      index: 0,
    });
    expect(reports[0]?.instance).toMatch(/^app-/);
    const ns = reports[0]?.crash_timestamp ?? 0;
    expect(Math.abs(ns / 1e6 - Date.now())).toBeLessThan(5 * 60_000);
  }, 120_000);

  it.each<[string, number, Record<string, unknown>, RegExp]>([
    [
      'an OOM kill',
      1,
      { environment: { KUBESIM_BEHAVIOUR: 'oom', KUBESIM_RUN_MS: '100' } },
      /^APP\/PROC\/WEB: Exited with status 137 \(out of memory\)$/,
    ],
    [
      'an image that cannot be pulled',
      2,
      { lifecycle: { docker_lifecycle: { image: 'registry.example/kubesim-pull-error:1', command: [] } } },
      // ErrImagePull, or ImagePullBackOff when the watch first sees the pod after its first back-off.
      /^APP\/PROC\/WEB: (ErrImagePull|ImagePullBackOff): \S/,
    ],
  ])(
    'says what happened: %s',
    async (what, n, extra, description) => {
      const g = uuid(n, 'said');
      const v = uuid(1, 'v1');
      const pg = `${g}-${v}`;
      await call(s.base, 'PUT', `/apps/${pg}`, desireBody(g, v, extra));
      const report = await eventually(
        async () => cc.callsTo(`/internal/v4/apps/${pg}/crashed`)[0],
        `a crash report (${what})`,
        60_000,
      );
      expect(report.body).toMatchObject({
        reason: 'CRASHED',
        exit_description: expect.stringMatching(description),
      });
      expect(report.cc?.problems).toEqual([]);
    },
    90_000,
  );
});
