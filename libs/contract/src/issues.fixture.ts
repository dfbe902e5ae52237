/** For the schema tests: the message of a failed parse, and whether it names a field. */
import { describeIssues } from './schemas.js';

/** Whether `message` has an issue for exactly this path (`a.b.0: ...`). */
export function namesField(message: string, path: string): boolean {
  return message.split('; ').some((part) => part.startsWith(`${path}: `));
}

/** The issues of a parse that must have failed, as the API words them. */
export function issuesOf(result: { success: boolean; error?: Parameters<typeof describeIssues>[0] }): string {
  if (result.success || !result.error) throw new Error('expected the parse to fail');
  return describeIssues(result.error);
}
