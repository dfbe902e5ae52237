/**
 * The queue dashboard (bull-board) at /admin/queues: every queue of the service, read through the
 * service's own Queue objects (so its prefix), behind its own HTTP Basic credentials, since bull-board
 * has no authentication and the dashboard can retry, clean and obliterate (dashboard access is Redis
 * access). Job data and return values pass through a redacting formatter before they leave. The page
 * loads nothing from elsewhere: bull-board's link to Google Fonts is dropped (the system font shows), and
 * its Content-Security-Policy allows only the service itself.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Router } from 'express';
import type { Queue } from 'bullmq';
import { QUEUE_NAMES } from '@opi/queue';
import { refuseCrossSiteWrites, requireBasicAuth } from './security.js';

export const DASHBOARD_PATH = '/admin/queues';

export interface DashboardOptions {
  username: string;
  password: string;
  /** bull-board's readOnlyMode: every write endpoint answers 405 and the buttons are hidden. */
  readOnly: boolean;
  /** The service's queues (the producer's, created with the service's prefix). */
  queues: readonly Queue[];
  /** Shown next to each queue's name so an operator sees which deployment's keys they look at. */
  prefix: string;
}

/** Keys whose values never leave the service: registry passwords, tokens, auth headers. */
export const SECRET_KEY = /password|secret|token|authorization|credential/i;
export const REDACTED = '[redacted]';

/**
 * A copy of `value` with the value of every secret-looking key replaced, at any depth. Job payloads are
 * identities by design (libs/queue/src/jobs.ts); this is the net for whatever slips in anyway.
 */
export function redactSecrets(value: unknown, depth = 0): unknown {
  // Job data is parsed JSON, so it has no cycles; the bound only stops absurd nesting.
  if (depth > 32) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, depth + 1));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) ? REDACTED : redactSecrets(v, depth + 1)]),
    );
  }
  return value;
}

const DESCRIPTIONS: Record<string, string> = {
  [QUEUE_NAMES.lrp]: 'Converging LRPs and restarting instances',
  [QUEUE_NAMES.sync]: 'The periodic cluster sync',
  [QUEUE_NAMES.task]: 'Running and cancelling tasks, staging',
  [QUEUE_NAMES.callback]: 'Reports to CC: task and staging results, crashes',
};

/**
 * What the page may load: its own scripts, styles, images and API only. bull-board's inline loading
 * spinner needs inline styles; its JSON config block is not a script a browser runs.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** bull-board's page asks Google Fonts for its typeface on every load: a call home, or a failed request. */
const REMOTE_FONTS = /<link[^>]+href="https:\/\/fonts\.(?:googleapis|gstatic)\.com[^>]*>\s*/g;

type ViewEngine = (path: string, options: object, done: (err: Error | null, html?: string) => void) => void;

/** Renders bull-board's page through its own engine, without the remote font link. */
function withoutRemoteFonts(app: ReturnType<ExpressAdapter['getRouter']>): void {
  const engines = (app as { engines: Record<string, ViewEngine | undefined> }).engines;
  const render = engines['.ejs'];
  if (!render) throw new Error("bull-board's view engine is not registered");
  (app as { engine(ext: string, fn: ViewEngine): unknown }).engine('ejs', (path, options, done) => {
    render(path, options, (err, html) => {
      done(err, html?.replace(REMOTE_FONTS, ''));
    });
  });
}

/** The dashboard's router, to mount at the application's root (it serves DASHBOARD_PATH only). */
export function dashboardRouter(options: DashboardOptions): Router {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  const adapters = options.queues.map((queue) => {
    const adapter = new BullMQAdapter(queue, {
      readOnlyMode: options.readOnly,
      displayName: `${options.prefix}:${queue.name}`,
      description: DESCRIPTIONS[queue.name] ?? '',
    });
    adapter.setFormatter('data', (data: unknown) => redactSecrets(data));
    adapter.setFormatter('returnValue', (data: unknown) => redactSecrets(data));
    return adapter;
  });
  createBullBoard({
    queues: adapters,
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: 'OPI queues',
        hideDocsLink: true,
        ...(options.readOnly ? { environment: { label: 'read-only', color: '#6b7280' } } : {}),
      },
    },
  });
  withoutRemoteFonts(serverAdapter.getRouter());
  const router = Router();
  router.use(
    DASHBOARD_PATH,
    requireBasicAuth(options, 'OPI queue dashboard'),
    refuseCrossSiteWrites,
    // The dashboard's answers hold job data: no shared cache may keep them.
    (_req, res, next) => {
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
      next();
    },
    serverAdapter.getRouter() as Router,
  );
  return router;
}
