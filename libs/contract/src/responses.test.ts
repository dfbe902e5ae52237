/** Bodies built by hand: each as the CC client that reads it parses it. */
import { describe, expect, it } from '@jest/globals';
import { errorBodyFor, instancesBody } from './responses.js';

describe('errorBodyFor', () => {
  it.each([
    ['/tasks/t-1', { message: 'm' }],
    ['/tasks', { message: 'm' }],
    ['/TASKS/t-1', { message: 'm' }],
    ['/stage/s-1', { message: 'm' }],
    ['/apps/g/v/instances', { instances: [], error: 'm' }],
    ['/apps/g/v/instances/', { instances: [], error: 'm' }],
    ['/apps/g-v', { error: { message: 'm' } }],
    ['/apps/g/v', { error: { message: 'm' } }],
    ['/apps/g/v/stop/0', { error: { message: 'm' } }],
    ['/apps', { error: { message: 'm' } }],
    ['/tasksx', { error: { message: 'm' } }],
    ['/stagexyz', { error: { message: 'm' } }],
    ['/', { error: { message: 'm' } }],
  ])('%s', (path, body) => {
    expect(errorBodyFor(path, 'm')).toEqual(body);
  });
});

describe('instancesBody', () => {
  it('keeps a nanosecond since exactly, beyond a JSON number in JavaScript', () => {
    const body = instancesBody('pg-1', [
      { index: 0, sinceNs: '1589212345123456789', state: 'RUNNING' },
      { index: 1, sinceNs: '0', state: 'UNCLAIMED', placementError: 'quota "q" "exceeded"' },
    ]);
    expect(body).toBe(
      '{"process_guid":"pg-1","instances":[{"index":0,"since":1589212345123456789,"state":"RUNNING"},' +
        '{"index":1,"since":0,"state":"UNCLAIMED","placement_error":"quota \\"q\\" \\"exceeded\\""}]}',
    );
    expect(JSON.parse(body)).toMatchObject({
      instances: [{ index: 0 }, { placement_error: 'quota "q" "exceeded"' }],
    });
  });

  it.each(['', '12a', '-1', '1e9'])('sends since %j as 0: the body stays JSON', (sinceNs) => {
    expect(JSON.parse(instancesBody('pg', [{ index: 0, sinceNs, state: 'CRASHED' }]))).toEqual({
      process_guid: 'pg',
      instances: [{ index: 0, since: 0, state: 'CRASHED' }],
    });
  });
});
