import { describe, expect, it } from '@jest/globals';
import { type LogOrigin, logSourceOf } from './log-source.js';

const app = {
  appGuid: 'app-guid',
  appName: 'dora',
  spaceGuid: 'space-guid',
  spaceName: 'dev',
  orgGuid: 'org-guid',
  orgName: 'acme',
};
const appTags = {
  source_id: 'app-guid',
  app_id: 'app-guid',
  app_name: 'dora',
  space_id: 'space-guid',
  space_name: 'dev',
  organization_id: 'org-guid',
  organization_name: 'acme',
};

describe('logSourceOf', () => {
  it.each<[string, LogOrigin, { sourceId: string; instanceId: string; tags: Record<string, string> }]>([
    [
      'the first web process: the app guid, its index',
      { kind: 'lrp', lrp: { ...app, guid: 'app-guid', processType: 'web' }, index: 1, podUid: 'uid-1' },
      {
        sourceId: 'app-guid',
        instanceId: '1',
        tags: {
          source_type: 'APP/PROC/WEB',
          ...appTags,
          instance_id: '1',
          process_id: 'app-guid',
          process_type: 'web',
          process_instance_id: 'uid-1',
        },
      },
    ],
    [
      'a worker process: still the app guid, its own process id, the type upper-cased',
      { kind: 'lrp', lrp: { ...app, guid: 'worker-guid', processType: 'worker' }, index: 0, podUid: 'u' },
      {
        sourceId: 'app-guid',
        instanceId: '0',
        tags: {
          source_type: 'APP/PROC/WORKER',
          ...appTags,
          instance_id: '0',
          process_id: 'worker-guid',
          process_type: 'worker',
          process_instance_id: 'u',
        },
      },
    ],
    [
      'a task: APP/TASK/<name>, instance 0',
      { kind: 'task', task: { ...app, name: 'migrate' } },
      {
        sourceId: 'app-guid',
        instanceId: '0',
        tags: { source_type: 'APP/TASK/migrate', ...appTags, instance_id: '0' },
      },
    ],
    [
      'staging: STG, instance 0; empty names left out',
      { kind: 'staging', staging: { ...app, spaceName: '', orgName: '' } },
      {
        sourceId: 'app-guid',
        instanceId: '0',
        tags: {
          source_type: 'STG',
          source_id: 'app-guid',
          app_id: 'app-guid',
          app_name: 'dora',
          space_id: 'space-guid',
          organization_id: 'org-guid',
          instance_id: '0',
        },
      },
    ],
  ])('%s', (_, origin, expected) => {
    expect(logSourceOf(origin)).toEqual(expected);
  });
});
