/**
 * How Diego names and tags a container's output, for Loggregator: every line under the app guid
 * (`source_id`, as CC's `log_guid`), the instance index as `instance_id` (0 for tasks and staging), the
 * source type `cf logs` shows (`APP/PROC/WEB`, `APP/TASK/<name>`, `STG`), and CC's metric tags
 * (`app_recipe_builder.rb`, `metric_tags`). Pure: the caller finds the record and the index.
 */
import type { AppIdentity, DesiredLrp, DesiredTask } from '@opi/domain';
import { SOURCE_TYPE_STAGING } from './staging-job.js';

export type LogOrigin =
  | {
      kind: 'lrp';
      lrp: Pick<DesiredLrp, keyof AppIdentity | 'guid' | 'processType'>;
      index: number;
      /** The pod's uid: Diego's instance guid (`process_instance_id`). */
      podUid: string;
    }
  | { kind: 'task'; task: Pick<DesiredTask, keyof AppIdentity | 'name'> }
  | { kind: 'staging'; staging: AppIdentity };

export interface LogSource {
  sourceId: string;
  instanceId: string;
  /** `tags.source_type` plus the metric tags. */
  tags: Record<string, string>;
}

/** Diego's `APP/PROC/<TYPE>` for an LRP, `APP/TASK/<name>` for a task, `STG` for staging. */
export function logSourceType(o: LogOrigin): string {
  switch (o.kind) {
    case 'lrp':
      return `APP/PROC/${o.lrp.processType.toUpperCase()}`;
    case 'task':
      return `APP/TASK/${o.task.name}`;
    case 'staging':
      return SOURCE_TYPE_STAGING;
  }
}

function appTags(app: AppIdentity): Record<string, string> {
  return {
    source_id: app.appGuid,
    app_id: app.appGuid,
    app_name: app.appName,
    space_id: app.spaceGuid,
    space_name: app.spaceName,
    organization_id: app.orgGuid,
    organization_name: app.orgName,
  };
}

export function logSourceOf(o: LogOrigin): LogSource {
  const app = o.kind === 'lrp' ? o.lrp : o.kind === 'task' ? o.task : o.staging;
  const instanceId = o.kind === 'lrp' ? String(o.index) : '0';
  const tags: Record<string, string> = {
    source_type: logSourceType(o),
    ...appTags(app),
    instance_id: instanceId,
  };
  if (o.kind === 'lrp') {
    tags['process_id'] = o.lrp.guid;
    tags['process_type'] = o.lrp.processType;
    tags['process_instance_id'] = o.podUid;
  }
  // An empty tag (a name CC did not send) says nothing; Log Cache keeps tags as given.
  return {
    sourceId: app.appGuid,
    instanceId,
    tags: Object.fromEntries(Object.entries(tags).filter(([, v]) => v !== '')),
  };
}
