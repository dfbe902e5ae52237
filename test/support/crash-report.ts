/** A crash report CC takes (the stand-in CC checks every body): an app instance that exited with status 1. */
import type { CrashReport } from '@opi/domain';

export function ccCrashReport(processGuid: string, overrides: Partial<CrashReport> = {}): CrashReport {
  return {
    processGuid,
    instance: 'app-0',
    index: 0,
    reason: 'CRASHED',
    exitStatus: 1,
    exitDescription: 'APP/PROC/WEB: Exited with status 1',
    crashCount: 1,
    crashTimestamp: 1_589_212_345,
    ...overrides,
  };
}
