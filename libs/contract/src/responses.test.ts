/** errorBodyFor: each route's error in the shape the CC client calling it reads. */
import { describe, expect, it } from '@jest/globals';
import { errorBodyFor } from './responses.js';

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
