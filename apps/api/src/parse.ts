/** Request bodies checked against the contract's schemas: a 400 naming each bad field, or the data. */
import type { z } from 'zod';
import { describeIssues } from '@opi/contract';
import { ValidationError } from '@opi/domain';

export function parseBody<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
  if (value === undefined) throw new ValidationError(`${what}: a JSON body is required`);
  const r = schema.safeParse(value);
  if (!r.success) throw new ValidationError(`invalid ${what}: ${describeIssues(r.error)}`);
  return r.data;
}
