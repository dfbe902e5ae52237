import { describe, expect, it } from '@jest/globals';
import { DNS_LABEL, type DesiredTask } from '@opi/domain';
import { TASK_GUID, sampleTask } from './job.fixture.js';
import type { Container, EnvVar, PodSpec } from '@opi/kube-objects';
import {
  TASK_SELECTOR,
  taskJobName,
  taskLabels,
  taskRegistrySecret,
  taskRegistrySecretName,
  taskFromJob,
  taskSelectorString,
  taskToJob,
} from './task-job.js';

const JOB_NAME = 'task-7e5d1c3a-3f729cd9a5';
const fieldRef = (name: string, fieldPath: string): EnvVar => ({
  name,
  valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } },
});
const DOWNWARD: EnvVar[] = [
  fieldRef('POD_NAME', 'metadata.name'),
  fieldRef('CF_INSTANCE_GUID', 'metadata.uid'),
  fieldRef('CF_INSTANCE_IP', 'status.podIP'),
  fieldRef('CF_INSTANCE_INTERNAL_IP', 'status.podIP'),
];
const labels = {
  'cloudfoundry.org/source_type': 'TASK',
  'cloudfoundry.org/task_guid': TASK_GUID,
  'cloudfoundry.org/app_guid': 'a1b2c3d4-0000-4000-8000-000000000001',
  'cloudfoundry.org/space_guid': 'a1b2c3d4-0000-4000-8000-000000000002',
  'cloudfoundry.org/org_guid': 'a1b2c3d4-0000-4000-8000-000000000003',
  'app.kubernetes.io/managed-by': 'opi-server',
};

const build = (task: DesiredTask = sampleTask(), runAsNonRoot = true) => taskToJob(task, { runAsNonRoot });
const podSpec = (task?: DesiredTask): PodSpec => build(task).spec.template.spec!;
const container = (task?: DesiredTask): Container => podSpec(task).containers[0]!;
const withSpec = (spec: Partial<DesiredTask['spec']>) =>
  sampleTask({ spec: { ...sampleTask().spec, ...spec } });

describe('taskJobName', () => {
  it.each<[string, string]>([
    [TASK_GUID, JOB_NAME],
    ['abc', 'task-abc-ba7816bf8f'],
    // Upper case and odd characters are made DNS-safe, a '-' left at the cut is dropped; the hash keeps it unique.
    ['ABC_DEF.9', 'task-abc-def-315a401451'],
    ['', 'task-e3b0c44298'],
    ['---', 'task-cb3f91d54e'],
  ])('%j → %j', (guid, expected) => {
    expect(taskJobName(guid)).toBe(expected);
  });

  it.each([TASK_GUID, 'ABC_DEF.9', '', 'ü'.repeat(100), 'x'.repeat(300)])(
    'is a DNS-1123 label of at most 24 characters for %j',
    (guid) => {
      expect(taskJobName(guid)).toMatch(DNS_LABEL);
      expect(taskJobName(guid).length).toBeLessThanOrEqual(24);
      expect(taskRegistrySecretName(guid)).toMatch(DNS_LABEL);
    },
  );

  it('is deterministic and tells guids with the same first 8 characters apart', () => {
    expect(taskJobName(TASK_GUID)).toBe(taskJobName(TASK_GUID));
    expect(taskJobName(`${TASK_GUID.slice(0, 8)}-other`)).not.toBe(taskJobName(TASK_GUID));
  });
});

describe('taskToJob', () => {
  it('builds the whole Job of a full task', () => {
    expect(build()).toEqual({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: JOB_NAME,
        namespace: 'cf-workloads',
        labels,
        annotations: {
          'cloudfoundry.org/task_guid': TASK_GUID,
          'cloudfoundry.org/task_name': 'migrate',
          'cloudfoundry.org/completion_callback': 'http://cc.internal/internal/v3/tasks/7e5d1c3a/completed',
          'cloudfoundry.org/app_name': 'My App',
          'cloudfoundry.org/space_name': 'dev',
          'cloudfoundry.org/org_name': 'acme',
        },
      },
      spec: {
        parallelism: 1,
        completions: 1,
        backoffLimit: 0,
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: 'opi-task',
                image: 'registry.example.com/team/app:1.2',
                command: ['/bin/sh', '-c', 'rake db:migrate'],
                env: [{ name: 'ZED', value: 'first' }, { name: 'ALPHA', value: 'second' }, ...DOWNWARD],
                resources: {
                  requests: { memory: '512M', cpu: '10m', 'ephemeral-storage': '2048M' },
                  limits: { memory: '512M', 'ephemeral-storage': '2048M' },
                },
                securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true },
              },
            ],
            restartPolicy: 'Never',
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            imagePullSecrets: [{ name: `${JOB_NAME}-registry` }],
          },
        },
      },
    });
  });

  it('leaves the command out when empty (the image entrypoint runs)', () => {
    expect(container(withSpec({ command: [] }))).not.toHaveProperty('command');
  });

  it('has no image pull secrets without credentials', () => {
    expect(podSpec(withSpec({ registry: undefined }))).not.toHaveProperty('imagePullSecrets');
  });

  it.each([true, false])('passes runAsNonRoot=%s to the container', (runAsNonRoot) => {
    expect(build(sampleTask(), runAsNonRoot).spec.template.spec!.containers[0]!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      runAsNonRoot,
    });
  });

  it.each<[string, DesiredTask['spec']['environment'], EnvVar[]]>([
    ['no variables: only the downward API', [], DOWNWARD],
    [
      'request order kept, duplicates too (the last wins in the container)',
      [
        { name: 'B', value: '1' },
        { name: 'A', value: '2' },
        { name: 'B', value: '3' },
      ],
      [{ name: 'B', value: '1' }, { name: 'A', value: '2' }, { name: 'B', value: '3' }, ...DOWNWARD],
    ],
    [
      'the downward API replaces request variables of the same name',
      [
        { name: 'CF_INSTANCE_IP', value: 'spoofed' },
        { name: 'KEEP', value: 'x' },
      ],
      [{ name: 'KEEP', value: 'x' }, ...DOWNWARD],
    ],
  ])('env: %s', (_what, environment, expected) => {
    expect(container(withSpec({ environment })).env).toEqual(expected);
  });

  it('leaves out labels whose values Kubernetes would refuse, never the ones that find the task', () => {
    const task = sampleTask({ appGuid: 'not a label value', orgGuid: '' });
    expect(build(task).metadata.labels).toEqual({
      'cloudfoundry.org/source_type': 'TASK',
      'cloudfoundry.org/task_guid': TASK_GUID,
      'cloudfoundry.org/space_guid': 'a1b2c3d4-0000-4000-8000-000000000002',
      'app.kubernetes.io/managed-by': 'opi-server',
    });
  });

  it('does not share the labels object between the Job and its template', () => {
    const job = build();
    expect(job.spec.template.metadata!.labels).not.toBe(job.metadata.labels);
  });
});

describe('task selectors', () => {
  it('select what taskToJob labels', () => {
    const matches = (selector: string, l: Record<string, string>) =>
      selector.split(',').every((term) => {
        const [key, value] = term.split('=');
        return l[key!] === value;
      });
    expect(TASK_SELECTOR).toBe('app.kubernetes.io/managed-by=opi-server,cloudfoundry.org/source_type=TASK');
    expect(matches(TASK_SELECTOR, taskLabels(sampleTask()))).toBe(true);
    expect(matches(taskSelectorString(TASK_GUID), taskLabels(sampleTask()))).toBe(true);
    expect(matches(taskSelectorString('other'), taskLabels(sampleTask()))).toBe(false);
  });
});

describe('taskRegistrySecret', () => {
  it('is a dockerconfigjson Secret named for the Job, with the task labels', () => {
    const secret = taskRegistrySecret(sampleTask())!;
    expect(secret).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${JOB_NAME}-registry`, namespace: 'cf-workloads', labels },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': expect.any(String) },
    });
    const config = JSON.parse(Buffer.from(secret.data!['.dockerconfigjson']!, 'base64').toString('utf8'));
    expect(config).toEqual({
      auths: {
        'registry.example.com': {
          username: 'robot',
          password: 's3cr:et',
          auth: Buffer.from('robot:s3cr:et').toString('base64'),
        },
      },
    });
  });

  it('is undefined without credentials', () => {
    expect(taskRegistrySecret(withSpec({ registry: undefined }))).toBeUndefined();
  });
});

describe('taskFromJob', () => {
  const task = sampleTask();
  const job = taskToJob(task, { runAsNonRoot: true });

  it('reads back what the Job keeps of its task: enough to report its end', () => {
    expect(taskFromJob(job, TASK_GUID)).toEqual({
      taskGuid: TASK_GUID,
      name: task.name,
      appGuid: task.appGuid,
      appName: task.appName,
      orgGuid: '',
      orgName: task.orgName,
      spaceGuid: '',
      spaceName: task.spaceName,
      namespace: task.namespace,
      completionCallback: task.completionCallback,
      spec: { image: task.spec.image, command: [], environment: [], memoryMb: 0, diskMb: 0, cpuWeight: 0 },
    });
  });

  it('gives nothing for a Job without a completion callback (nowhere to report to)', () => {
    const annotations = { ...job.metadata.annotations };
    delete annotations['cloudfoundry.org/completion_callback'];
    expect(taskFromJob({ ...job, metadata: { ...job.metadata, annotations } }, TASK_GUID)).toBeUndefined();
  });
});
