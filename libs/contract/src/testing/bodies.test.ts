/**
 * The bodies @opi/contract/testing builds are ones the contract takes, as the suites and the bench send
 * them: the desire with the nulls CC's client sends for fields it leaves unset too.
 */
import { describe, expect, it } from '@jest/globals';
import { desireLrpSchema, updateLrpSchema } from '../schemas.js';
import { stagingRequestSchema, taskRequestSchema } from '../task-schemas.js';
import {
  buildpackLifecycle,
  clientDesireBody,
  desireBody,
  fullDesireBody,
  minimalDesireBody,
  newLrp,
  stagingBody,
  taskBody,
  updateBody,
  uuid,
} from '../testing.js';

const parsed = (schema: { safeParse(b: unknown): { success: boolean; error?: unknown } }, body: unknown) => {
  const r = schema.safeParse(body);
  return r.success ? 'ok' : String(r.error);
};

describe('@opi/contract/testing', () => {
  it('gives the nth guid under a salt in UUID form, the same each time', () => {
    expect(uuid(10, 'c0ffee')).toBe('c0ffee00-0000-4000-8000-00000000000a');
    expect(uuid(10, 'c0ffee')).toBe(uuid(10, 'c0ffee'));
    expect(uuid(1)).toBe('a0000000-0000-4000-8000-000000000001');
    expect(newLrp().guid).not.toBe(newLrp().guid);
  });

  it('builds desires the schema takes, with CC’s nulls as well', () => {
    const lrp = newLrp();
    const nulls = {
      health_check_http_endpoint: null,
      lifecycle: {
        docker_lifecycle: { command: [], image: 'nginx', registry_username: null, registry_password: null },
      },
    };
    for (const body of [
      desireBody(uuid(1), uuid(1, 'v1')),
      desireBody(uuid(1), uuid(1, 'v1'), nulls),
      clientDesireBody(lrp),
      clientDesireBody(lrp, nulls),
      fullDesireBody(),
      minimalDesireBody(),
    ]) {
      expect(parsed(desireLrpSchema, body)).toBe('ok');
    }
  });

  it('keeps desireBody the same for the same guids, and gives clientDesireBody fresh app guids', () => {
    expect(desireBody(uuid(1), uuid(2))).toEqual(desireBody(uuid(1), uuid(2)));
    const lrp = newLrp();
    expect(clientDesireBody(lrp)['process_guid']).toBe(lrp.processGuid);
    expect(clientDesireBody(lrp)['app_guid']).not.toBe(clientDesireBody(lrp)['app_guid']);
  });

  it('builds updates, tasks and stagings the schemas take', () => {
    const g = uuid(3, 'task');
    expect(parsed(updateLrpSchema, updateBody(newLrp(), { instances: 2, annotation: 'a' }))).toBe('ok');
    expect(parsed(taskRequestSchema, taskBody('http://cc.example', g))).toBe('ok');
    for (const lifecycle of [
      { docker_lifecycle: { image: 'registry.example/app:1' } },
      buildpackLifecycle(),
      buildpackLifecycle({ skip_detect: false }),
    ]) {
      expect(parsed(stagingRequestSchema, stagingBody('http://cc.example', g, lifecycle))).toBe('ok');
    }
  });
});
