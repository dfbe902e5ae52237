import { describe, expect, it } from '@jest/globals';
import { createOrGet } from './create-or-get.js';
import { AlreadyExistsError, ConflictError } from './errors.js';

const taken = () => Promise.reject(new AlreadyExistsError({ message: 'secrets "s" already exists' }));

describe('createOrGet', () => {
  it('returns what it created, without reading', async () => {
    let reads = 0;
    const result = await createOrGet(
      () => Promise.resolve('new'),
      () => Promise.resolve(`read ${++reads}`),
    );
    expect(result).toEqual({ created: true, object: 'new' });
    expect(reads).toBe(0);
  });

  it('reads the object that has the name when it is taken', async () => {
    const result = await createOrGet(taken, () => Promise.resolve('existing'));
    expect(result).toMatchObject({ created: false, existing: 'existing' });
    expect(!result.created && result.refusal).toBeInstanceOf(AlreadyExistsError);
  });

  it('says when the name is taken but the object is gone again, or when it was not asked to read', async () => {
    await expect(createOrGet(taken, () => Promise.resolve(undefined))).resolves.toMatchObject({
      created: false,
      existing: undefined,
    });
    await expect(createOrGet(taken)).resolves.toMatchObject({ created: false, existing: undefined });
  });

  it('throws any other error', async () => {
    const conflict = new ConflictError({ message: 'conflict' });
    await expect(
      createOrGet(
        () => Promise.reject(conflict),
        () => Promise.resolve('x'),
      ),
    ).rejects.toBe(conflict);
  });
});
