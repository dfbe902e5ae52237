/**
 * createApp(deps): the Express application without a listening socket, so tests drive it directly and
 * main.ts only wires and listens. CC's routes sit behind its credentials; the operator endpoints
 * (dashboard, health, metrics) do not take them, and move to createAdminApp's app with OPI_ADMIN_PORT.
 */
import express, { type Express, type RequestHandler, Router } from 'express';
import type { Logger } from '@opi/logging';
import { type OpiMetrics, httpObserver } from '@opi/metrics';
import { DASHBOARD_PATH, type DashboardOptions, dashboardRouter } from './dashboard.js';
import { errorHandler, sendError } from './errors.js';
import { type HealthDeps, healthRouter, isProbe, metricsRouter } from './routes/health.js';
import { type AppRoutesDeps, appRoutes } from './routes/apps.js';
import { type TaskRoutesDeps, taskRoutes } from './routes/tasks.js';
import { type BackPressureOptions, backPressure, rateLimitPerClient } from './limits.js';
import { requireBearerToken } from './security.js';
import { requestLog } from './request-log.js';
import { series } from './series.js';

export interface AppDeps extends AppRoutesDeps, TaskRoutesDeps {
  logger: Logger;
  bodyLimitBytes: number;
  /** Tokens CC must send on its routes; none: no token is asked (mutual TLS or loopback guard them). */
  apiTokens?: readonly string[];
  /** The queue dashboard at /admin/queues; omitted: not served. */
  dashboard?: DashboardOptions;
  /** The operator endpoints are served by createAdminApp on their own port, not by createApp. */
  separateAdmin?: boolean;
  /** /healthz and /readyz; omitted: not served. */
  health?: HealthDeps;
  /** /metrics, and request metrics of CC's routes; omitted: neither. */
  metrics?: OpiMetrics;
  /** Requests per minute one client may make to CC's routes (limits.ts); omitted or 0: no limit. */
  rateLimitPerMinute?: number;
  /** Refuse writes while their queue is full (limits.ts); omitted: never. */
  backPressure?: Omit<BackPressureOptions, 'metrics'>;
}

function bareApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  return app;
}

/**
 * One line per request, and (given `metrics`) its count by route and status (see httpObserver). Mounted
 * first, so every answer counts and is logged: refusals by the credentials check and the body parser too.
 */
function logRequests(logger: Logger, metrics?: OpiMetrics): RequestHandler {
  return requestLog(logger, {
    onEnd: metrics && httpObserver(metrics),
    // Probes and scrapes come every few seconds and say nothing new.
    ignore: (req) => isProbe(req.url),
    level: (req, res) => {
      if (res.statusCode >= 500) return 'error';
      if (res.statusCode >= 400) return 'warn';
      // An open dashboard polls every few seconds; its reads would drown the log, its writes should not.
      const url = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '';
      return url.startsWith(DASHBOARD_PATH) && req.method === 'GET' ? 'debug' : 'info';
    },
  });
}

function finish(app: Express): Express {
  app.use((req, res) => {
    sendError(req, res, 404, `no route for ${req.method} ${req.path}`);
  });
  app.use(errorHandler);
  return app;
}

/** Whether a path is the operator endpoints' (Express matches paths case-insensitively, `/x/` as `/x`). */
export function isOperatorPath(path: string): boolean {
  const p = path.toLowerCase().replace(/(?<=.)\/$/, '');
  return isProbe(p) || p === DASHBOARD_PATH || p.startsWith(`${DASHBOARD_PATH}/`);
}

/** Operator endpoints: no CC credentials (probes and scrapers have none); the dashboard has its own. */
export function operatorRoutes(deps: AppDeps): Router {
  const r = Router();
  if (deps.dashboard) r.use(dashboardRouter(deps.dashboard));
  if (deps.health) r.use(healthRouter(deps.health));
  if (deps.metrics) r.use(metricsRouter(deps.metrics));
  return r;
}

export function createApp(deps: AppDeps): Express {
  const app = bareApp();
  // Everything before the body parser runs as one layer (series.ts): it is the same for every request.
  const front: RequestHandler[] = [logRequests(deps.logger, deps.metrics)];
  if (!deps.separateAdmin) {
    // Entered only for its own paths, so CC's requests do not step into a router they never use.
    const operator = operatorRoutes(deps);
    front.push((req, res, next) => {
      if (isOperatorPath(req.path)) operator(req, res, next);
      else next();
    });
  }
  // Everything below is CC's. Its credentials are checked before a body is even read.
  if (deps.apiTokens?.length) front.push(requireBearerToken(deps.apiTokens));
  // Counted per authenticated client, before the body is read.
  if (deps.rateLimitPerMinute)
    front.push(
      rateLimitPerClient({
        perMinute: deps.rateLimitPerMinute,
        tokensConfigured: (deps.apiTokens?.length ?? 0) > 0,
        metrics: deps.metrics,
      }),
    );
  app.use(series(...front));
  // CC sends JSON; parse any content type so a missing header is not mistaken for a missing body.
  app.use(express.json({ limit: deps.bodyLimitBytes, type: () => true, strict: false }));
  const guard = backPressure(deps.backPressure && { ...deps.backPressure, metrics: deps.metrics });
  // On the app itself: a nested Router would cost a dispatch of its own on every request.
  appRoutes({ ...deps, guard }, app);
  taskRoutes({ ...deps, guard }, app);
  return finish(app);
}

/** The operator endpoints alone, for OPI_ADMIN_PORT. */
export function createAdminApp(deps: AppDeps): Express {
  const app = bareApp();
  app.use(logRequests(deps.logger));
  app.use(operatorRoutes(deps));
  return finish(app);
}
