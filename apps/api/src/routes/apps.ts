/**
 * The contract's app routes. A desire, update or stop is recorded with the converge it asks for in one
 * store call (the converge inbox: docs/decisions/0004-converge-inbox.md); reads come from Redis only,
 * never from the cluster.
 */
import { type IRouter, Router, type Request, type Response } from 'express';
import {
  type DesireDefaults,
  type InstancesErrorBody,
  desireLrpSchema,
  describeIssues,
  guidParam,
  instancesBody,
  indexParam,
  parseDesireFast,
  routesOf,
  schedulingInfosBody,
  toDesiredLrp,
  updateLrpSchema,
  versionParam,
} from '@opi/contract';
import { NotFoundError, ValidationError, processGuidOf } from '@opi/domain';
import { type JobProducer, QUEUE_NAMES } from '@opi/queue';
import { type StateStore, presentInstances } from '@opi/state';
import { type QueueGuard, backPressure } from '../limits.js';
import { parseBody } from '../parse.js';
import { logFacts } from '../request-log.js';

export interface AppRoutesDeps {
  store: StateStore;
  producer: JobProducer;
  defaults: DesireDefaults;
  /** Refuses a write while the queue it adds to is full (back-pressure); omitted: never. */
  guard?: QueueGuard;
}

function param(req: Request, name: string): string {
  const v = req.params[name];
  return typeof v === 'string' ? v : '';
}

function lrpIdentity(req: Request): { guid: string; version: string; processGuid: string } {
  const g = guidParam.safeParse(param(req, 'guid'));
  const v = versionParam.safeParse(param(req, 'version'));
  if (!g.success) throw new ValidationError(`invalid guid in path: ${describeIssues(g.error)}`);
  if (!v.success) throw new ValidationError(`invalid version in path: ${describeIssues(v.error)}`);
  return { guid: g.data, version: v.data, processGuid: processGuidOf(g.data, v.data) };
}

function sendCacheAge(res: Response, syncedAt: number | undefined): void {
  res.setHeader(
    'X-OPI-Cache-Age-Ms',
    syncedAt !== undefined ? String(Math.max(0, Date.now() - syncedAt)) : 'never-synced',
  );
}

/** Registers the app routes on `r` (createApp passes the app itself). */
export function appRoutes(
  { store, producer, defaults, guard }: AppRoutesDeps,
  r: IRouter = Router(),
): IRouter {
  // Before the handler: a refused write records nothing.
  const unlessQueueFull = (guard ?? backPressure(undefined))(QUEUE_NAMES.lrp);

  r.put('/apps/:process_guid', unlessQueueFull, async (req, res) => {
    // Zod words the 400 for what the fast reader does not take.
    const body = parseDesireFast(req.body) ?? parseBody(desireLrpSchema, req.body, 'desire request');
    if (body.process_guid !== param(req, 'process_guid')) {
      throw new ValidationError('process_guid in the path does not match the body');
    }
    const lrp = toDesiredLrp(body, defaults);
    const { changed, generation } = await store.desire(lrp);
    logFacts(res, { processGuid: lrp.processGuid, generation, changed, did: 'lrp desired' });
    res.status(202).end();
  });

  // GET /apps at 100,000 LRPs is a 17 MB body: it is joined from the stored entries once per change of
  // the scheduling infos, not once per request (CC asks every 30 s, and several CCs or a retry ask
  // again); one GET of their version tells whether the body kept here is still current.
  let kept: { version: string; body: Buffer } | undefined;
  r.get('/apps', async (_req, res) => {
    let body = kept && kept.version === (await store.schedulingInfosVersion()) ? kept.body : undefined;
    if (!body) {
      const fresh = await store.schedulingInfos();
      body = Buffer.from(schedulingInfosBody(fresh.entries));
      kept = fresh.version === undefined ? undefined : { version: fresh.version, body };
    }
    res.status(200).type('application/json').send(body);
  });

  r.post('/apps/:process_guid', unlessQueueFull, async (req, res) => {
    const body = parseBody(updateLrpSchema, req.body, 'update request');
    const processGuid = processGuidOf(body.guid, body.version);
    if (processGuid !== param(req, 'process_guid')) {
      throw new ValidationError('process_guid in the path does not match guid and version in the body');
    }
    const updated = await store.update(processGuid, {
      instances: body.update.instances,
      annotation: body.update.annotation,
      image: body.update.image,
      ...(body.update.routes ? { routes: routesOf(body.update.routes) } : {}),
    });
    if (!updated) throw new NotFoundError(`no LRP with process guid ${processGuid}`);
    logFacts(res, { processGuid, generation: updated.generation, did: 'lrp updated' });
    res.status(200).json({});
  });

  r.get('/apps/:guid/:version', async (req, res) => {
    const { processGuid } = lrpIdentity(req);
    const rec = await store.get(processGuid);
    if (rec?.state !== 'desired') throw new NotFoundError(`no LRP with process guid ${processGuid}`);
    const { lrp } = rec;
    res.status(200).json({
      desired_lrp: {
        process_guid: lrp.processGuid,
        instances: lrp.instances,
        annotation: lrp.annotation,
        image: lrp.image,
      },
    });
  });

  r.put('/apps/:guid/:version/stop', unlessQueueFull, async (req, res) => {
    const { guid, version, processGuid } = lrpIdentity(req);
    const { generation, existed } = await store.stop(processGuid, guid, version);
    logFacts(res, { processGuid, generation, existed, did: 'lrp stopped' });
    res.status(200).json({});
  });

  r.put('/apps/:guid/:version/stop/:index', unlessQueueFull, async (req, res) => {
    const { processGuid } = lrpIdentity(req);
    const idx = indexParam.safeParse(param(req, 'index'));
    if (!idx.success) throw new ValidationError(`invalid index: ${describeIssues(idx.error)}`);
    const index = Number(idx.data);
    const { record, cached } = await store.lrpWithInstances(processGuid);
    if (record?.state !== 'desired') throw new NotFoundError(`no LRP with process guid ${processGuid}`);
    if (index >= record.lrp.instances) {
      throw new ValidationError(
        `index ${index} is out of range: the LRP has ${record.lrp.instances} instances`,
      );
    }
    const shown = presentInstances(cached?.instances ?? [], record.lrp.instances);
    const podName = shown.find((i) => i.index === index)?.podName || undefined;
    if (podName) {
      await producer.stopInstance({ processGuid, index, podName });
      logFacts(res, { processGuid, index, podName, did: 'instance restart requested' });
    } else {
      logFacts(res, { processGuid, index, did: 'nothing to restart: instance not running' });
    }
    res.status(200).json({});
  });

  r.get('/apps/:guid/:version/instances', async (req, res) => {
    const { processGuid } = lrpIdentity(req);
    // One round trip: the record, the cached instances, the cache's age and a refusal of the desire.
    const { record, cached, syncedAt, refusal } = await store.lrpWithInstances(processGuid);
    sendCacheAge(res, syncedAt);
    if (record?.state !== 'desired' && !cached) {
      // CC takes a stopped process's answer as "no instances" only if the error says "not found".
      const body: InstancesErrorBody = {
        process_guid: processGuid,
        instances: [],
        error: `no instances: LRP ${processGuid} not found`,
      };
      res.status(404).json(body);
      return;
    }
    const rows = presentInstances(
      cached?.instances ?? [],
      record?.state === 'desired' ? record.lrp.instances : 0,
      refusal?.message,
      cached?.unplaced,
    );
    res.status(200).type('application/json').send(instancesBody(processGuid, rows));
  });

  return r;
}
