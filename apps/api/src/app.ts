/**
 * createApp(deps): the Express application without a listening socket, so tests drive it directly and
 * main.ts only wires and listens.
 */
import { randomUUID } from 'node:crypto';
import express, { type Express } from 'express';
import { pinoHttp } from 'pino-http';
import { errorBody } from '@opi/contract';
import type { Logger } from '@opi/logging';
import { errorHandler } from './errors.js';
import { type AppRoutesDeps, appRoutes } from './routes/apps.js';
import { type TaskRoutesDeps, taskRoutes } from './routes/tasks.js';

export interface AppDeps extends AppRoutesDeps, TaskRoutesDeps {
  logger: Logger;
  bodyLimitBytes: number;
}

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req, res) => {
        const incoming = req.headers['x-request-id'];
        const id = typeof incoming === 'string' && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      customLogLevel: (_req, res, err) =>
        err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
    }),
  );
  // CC sends JSON; parse any content type so a missing header is not mistaken for a missing body.
  app.use(express.json({ limit: deps.bodyLimitBytes, type: () => true, strict: false }));
  app.use(appRoutes(deps));
  app.use(taskRoutes(deps));
  app.use((req, res) => {
    res.status(404).json(errorBody(`no route for ${req.method} ${req.path}`));
  });
  app.use(errorHandler);
  return app;
}
