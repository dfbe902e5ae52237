/**
 * A failed staging as CC should hear it: the error id CC shows its own message for, and a message short
 * enough for CC's column (STAGING_MESSAGE_MAX), made of the one line of the recipe's output that says
 * what went wrong rather than its first lines.
 */
import { STAGING_MESSAGE_MAX, type StagingErrorId, type StagingOutcome, boundText } from '@opi/domain';

/**
 * The buildpack app lifecycle's exit codes (its builder exits 222 when no buildpack detects the app, 223
 * when one fails to compile, 224 when its release fails), which Diego's stager turns into these ids (CC
 * lib/cloud_controller/diego/failure_reason_sanitizer.rb:31-39). A recipe exits with them too.
 */
const BUILDPACK_EXIT_IDS: ReadonlyMap<number, StagingErrorId> = new Map([
  [222, 'NoAppDetectedError'],
  [223, 'BuildpackCompileFailed'],
  [224, 'BuildpackReleaseFailed'],
]);

/** The error id an exit code of the recipe stands for; StagingError for any other. */
export function stagingErrorIdOf(exitCode: number): StagingErrorId {
  return BUILDPACK_EXIT_IDS.get(exitCode) ?? 'StagingError';
}

/** Terminal colour and cursor codes, which buildpacks print around their errors. */
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;
/** A line that says it is an error. */
const ERROR_LINE = /\berror\b|\*\*error\*\*|\bfatal\b|\bpanic\b|exception/i;
/** A line that says something failed, less plainly. */
const FAILURE_LINE =
  /\bfail(?:ed|ure|s)?\b|\bdenied\b|\brefused\b|not found|no such|\bcannot\b|can't|could not|unable|\binvalid\b|\bkilled\b/i;

/**
 * The line of `text` (a termination message, often a log tail) that best says what went wrong: the last
 * that calls itself an error, else the last that says something failed, else the last line; '' for none.
 */
export function usefulLine(text: string | undefined): string {
  const lines = (text ?? '')
    .split(/\r?\n/)
    .map((l) => l.replace(ANSI, '').replace(/\s+/g, ' ').trim())
    .filter(Boolean);
  const last = (re: RegExp) => lines.findLast((l) => re.test(l));
  return last(ERROR_LINE) ?? last(FAILURE_LINE) ?? lines.at(-1) ?? '';
}

/** A failed staging with `message` cut to what CC can store. */
export function stagingFailed(message: string, errorId: StagingErrorId = 'StagingError'): StagingOutcome {
  return {
    failed: true,
    message: boundText(message, STAGING_MESSAGE_MAX),
    errorId,
  };
}
