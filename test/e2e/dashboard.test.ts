/**
 * The queue dashboard in a real browser: Debian's headless Chromium driven by playwright-core (no
 * browser download), against the whole service in-process. A converge the cluster refuses fails for
 * good; an operator opens /admin/queues with the dashboard's credentials, sees the queues and the failed
 * job with its reason, clicks retry, and the job runs again (checked through BullMQ, and by the
 * Deployment it creates). The page loads nothing from elsewhere and breaks no rule of its
 * Content-Security-Policy. Without the credentials the page is a 401.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { type BrowserContext, type Response, chromium } from 'playwright-core';
import { QUEUE_NAMES } from '@opi/queue';
import { desireBody, uuid } from '@opi/contract/testing';
import { type Service, cacheWriterSettled, deployedGuids, startService } from '../support/service.js';
import { eventually } from '../support/eventually.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = join(process.cwd(), 'test/e2e/screenshots/dashboard.png');
const CREDENTIALS = { username: 'operator', password: 'e2e-dashboard-password' };
// Quiet, self-contained Chromium: no sandbox (containers, root), no GPU, no calls home.
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// CI installs the browser (.ci/run), so there a missing one is a failure; on a dev machine, a loud skip.
const browserPresent = existsSync(CHROMIUM);
if (!browserPresent) {
  const why = `${CHROMIUM} is missing: install Debian's chromium (sudo apt-get install -y chromium) to run the dashboard's browser test`;
  if (process.env['CI'] || process.env['OPI_E2E_REQUIRE_BROWSER']) throw new Error(why);
  console.warn(`\n${'!'.repeat(100)}\nSKIPPING test/e2e/dashboard.test.ts: ${why}\n${'!'.repeat(100)}\n`);
}
const describeWithBrowser = browserPresent ? describe : describe.skip;

describeWithBrowser('the queue dashboard in Chromium', () => {
  let s: Service;
  let lrpQueue: Queue;
  const profiles: string[] = [];
  const contexts: BrowserContext[] = [];

  /** A browser with a fresh profile (its own --user-data-dir), optionally with HTTP credentials. */
  async function browser(httpCredentials?: { username: string; password: string }): Promise<BrowserContext> {
    const profile = mkdtempSync(join(tmpdir(), 'opi-chromium-'));
    profiles.push(profile);
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width: 1280, height: 800 },
      ...(httpCredentials ? { httpCredentials } : {}),
    });
    contexts.push(context);
    return context;
  }

  beforeAll(async () => {
    s = await startService({
      env: {
        OPI_DASHBOARD_USERNAME: CREDENTIALS.username,
        OPI_DASHBOARD_PASSWORD: CREDENTIALS.password,
        // No periodic sync: it would converge the LRP itself, and the job under test is the retried one.
        OPI_RESYNC_INTERVAL_MS: '3600000',
      },
    });
    lrpQueue = new Queue(QUEUE_NAMES.lrp, { connection: s.redis, prefix: s.settings.queuePrefix });
    // The takeover's sync would converge the LRP under test itself.
    await cacheWriterSettled(s);
  }, 60_000);

  afterAll(async () => {
    for (const c of contexts) await c.close();
    for (const p of profiles) rmSync(p, { recursive: true, force: true });
    await lrpQueue.close();
    await s.close();
  });

  it('shows the queues and a failed job, and retrying it runs it again', async () => {
    // The cluster refuses to create Deployments (403: permanent), so the converge fails at once.
    s.sim.faults.set({ errorRate: 1, errorCodes: [403], verbs: ['create'], resources: ['deployments'] });
    const guid = uuid(1, 'e2e');
    const version = uuid(2, 'e2e');
    const processGuid = `${guid}-${version}`;
    const put = await fetch(`${s.base}/apps/${processGuid}`, {
      method: 'PUT',
      body: JSON.stringify(desireBody(guid, version)),
    });
    expect(put.status).toBe(202);
    const failed = await eventually(async () => (await lrpQueue.getFailed())[0], 'the converge to fail');
    const jobId = failed.id ?? '';
    expect(failed.failedReason).toMatch(/kubernetes refused: 403/);
    expect(await lrpQueue.getFailedCount()).toBe(1);
    const firstFinishedOn = failed.finishedOn ?? 0;
    // The cluster takes Deployments again: a retry can now succeed.
    s.sim.faults.reset();

    const context = await browser(CREDENTIALS);
    const page = context.pages()[0] ?? (await context.newPage());
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // A refused load (the Content-Security-Policy) is reported on the console.
    page.on('console', (m) => {
      if (m.type() === 'error') pageErrors.push(m.text());
    });
    const elsewhere: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(`${s.base}/`)) elsewhere.push(r.url());
    });

    const overview = await page.goto(`${s.base}/admin/queues`);
    expect(overview?.status()).toBe(200);
    expect(overview?.headers()['content-security-policy']).toContain("default-src 'self'");
    expect(await overview?.text()).not.toContain('fonts.googleapis.com');
    // Every queue of the service, by name in the menu and under the service's prefix in the overview.
    for (const name of Object.values(QUEUE_NAMES)) {
      await page.getByText(`${s.settings.queuePrefix}:${name}`, { exact: true }).waitFor();
      await page.getByRole('link', { name, exact: true }).first().waitFor();
    }

    await page.goto(`${s.base}/admin/queues/queue/${QUEUE_NAMES.lrp}?status=failed`);
    await page.getByText(jobId).first().waitFor();
    await page
      .getByText(/kubernetes refused: 403/)
      .first()
      .waitFor();
    mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // The job's own retry button (the refresh icon; "Retry all" is the queue's), then its confirmation.
    const retry = page.locator('button:has(svg.lucide-refresh-cw)').filter({ hasNotText: 'Retry all' });
    expect(await retry.count()).toBe(1);
    await retry.click();
    await page.getByText('Are you sure that you want to retry this job?').waitFor();
    await page.getByRole('button', { name: 'Confirm' }).click();

    // BullMQ: the same job ran again, later, and this time completed; the cluster has its Deployment.
    await eventually(
      async () => (await lrpQueue.getJobState(jobId)) === 'completed',
      'the retried job to complete',
    );
    const rerun = await lrpQueue.getJob(jobId);
    expect(rerun?.finishedOn ?? 0).toBeGreaterThan(firstFinishedOn);
    expect(rerun?.failedReason ?? '').toBe('');
    expect(await lrpQueue.getFailedCount()).toBe(0);
    await eventually(async () => (await deployedGuids(s)).has(processGuid), 'the Deployment');

    // And the dashboard shows it among the completed jobs.
    await page.goto(`${s.base}/admin/queues/queue/${QUEUE_NAMES.lrp}?status=completed`);
    await page.getByText(jobId).first().waitFor();
    expect(pageErrors).toEqual([]);
    // Nothing loaded from anywhere but the service (bull-board's page asked Google Fonts on every load).
    expect(elsewhere).toEqual([]);
  }, 120_000);

  it('answers 401 to a browser without the credentials', async () => {
    for (const credentials of [undefined, { username: CREDENTIALS.username, password: 'not-the-password' }]) {
      const context = await browser(credentials);
      const page = context.pages()[0] ?? (await context.newPage());
      const answer = page.waitForResponse((r) => r.url() === `${s.base}/admin/queues`);
      // Headless Chromium has no login prompt to show, so it may end the navigation with
      // ERR_INVALID_AUTH_CREDENTIALS rather than render the 401; the answer itself is what counts.
      const shown = await page.goto(`${s.base}/admin/queues`).catch((e: unknown) => e);
      const res = await answer;
      expect(res.status()).toBe(401);
      expect(res.headers()['www-authenticate']).toMatch(/^Basic realm="OPI queue dashboard"/);
      expect(await res.text()).not.toContain('OPI queues');
      if (shown instanceof Error) expect(shown.message).toMatch(/ERR_INVALID_AUTH_CREDENTIALS/);
      else expect((shown as Response | null)?.status()).toBe(401);
    }
  }, 60_000);
});
