/**
 * The contract's task and staging routes. As for apps: validate, record, enqueue; the workers run the
 * Job and report to CC. A task leaves GET /tasks once CC has been told its end (that is how CC tells a
 * lost task from a running one).
 */
import { type IRouter, Router, type Request } from 'express';
import {
  type DesireDefaults,
  describeIssues,
  stagingRequestSchema,
  taskGuidParam,
  taskRequestSchema,
  toDesiredStaging,
  toDesiredTask,
} from '@opi/contract';
import { ValidationError } from '@opi/domain';
import { type JobProducer, QUEUE_NAMES } from '@opi/queue';
import type { TaskStore } from '@opi/state';
import { type QueueGuard, backPressure } from '../limits.js';
import { sendError } from '../errors.js';
import { parseBody } from '../parse.js';
import { logFacts } from '../request-log.js';

export interface TaskRoutesDeps {
  tasks: TaskStore;
  producer: JobProducer;
  defaults: DesireDefaults;
  /** Refuses a write while the queue it adds to is full (back-pressure); omitted: never. */
  guard?: QueueGuard;
}

function guidParam(req: Request, name: string): string {
  const r = taskGuidParam.safeParse(req.params[name]);
  if (!r.success) throw new ValidationError(`invalid ${name} in path: ${describeIssues(r.error)}`);
  return r.data;
}

/** Registers the task and staging routes on `r` (createApp passes the app itself). */
export function taskRoutes(
  { tasks, producer, defaults, guard }: TaskRoutesDeps,
  r: IRouter = Router(),
): IRouter {
  // Before the handler: a refused write records nothing.
  const unlessQueueFull = (guard ?? backPressure(undefined))(QUEUE_NAMES.task);

  r.post('/tasks/:task_guid', unlessQueueFull, async (req, res) => {
    const taskGuid = guidParam(req, 'task_guid');
    const body = parseBody(taskRequestSchema, req.body, 'task request');
    const created = await tasks.createTask(toDesiredTask(taskGuid, body, defaults));
    logFacts(res, { taskGuid, created, did: 'task desired' });
    // Posting the same task twice runs it once: the record exists, and the job id is the task guid.
    if (created) await producer.runTask(taskGuid);
    res.status(202).end();
  });

  r.get('/tasks', async (_req, res) => {
    const guids = await tasks.unreportedTaskGuids();
    res.status(200).json(guids.sort().map((guid) => ({ guid })));
  });

  r.get('/tasks/:task_guid', async (req, res) => {
    const taskGuid = guidParam(req, 'task_guid');
    const rec = await tasks.getTask(taskGuid);
    if (!rec || rec.reported) {
      sendError(req, res, 404, `task ${taskGuid} not found`);
      return;
    }
    res.status(200).json({ guid: taskGuid });
  });

  r.delete('/tasks/:task_guid', unlessQueueFull, async (req, res) => {
    const taskGuid = guidParam(req, 'task_guid');
    const rec = await tasks.cancelTask(taskGuid);
    if (!rec || rec.reported) {
      sendError(req, res, 404, `task ${taskGuid} not found`);
      return;
    }
    logFacts(res, { taskGuid, did: 'task cancel requested' });
    await producer.cancelTask(taskGuid);
    res.status(204).end();
  });

  r.post('/stage/:staging_guid', unlessQueueFull, async (req, res) => {
    const stagingGuid = guidParam(req, 'staging_guid');
    const body = parseBody(stagingRequestSchema, req.body, 'staging request');
    if (body.staging_guid !== undefined && body.staging_guid !== stagingGuid) {
      throw new ValidationError('staging_guid in the path does not match the body');
    }
    const created = await tasks.createStaging(toDesiredStaging(stagingGuid, body, defaults));
    logFacts(res, {
      stagingGuid,
      created,
      lifecycle: body.lifecycle.docker_lifecycle ? 'docker' : 'buildpack',
      did: 'staging requested',
    });
    if (created) await producer.stage(stagingGuid);
    res.status(202).end();
  });

  return r;
}
