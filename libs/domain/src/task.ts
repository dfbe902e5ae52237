/**
 * One-off tasks and staging, as the service records them. Both run as Kubernetes Jobs and end with a
 * callback to CC; the record is the source of truth for what to run and whether CC has been told.
 */
import type { AppIdentity, RegistryCredentials } from './lrp.js';

export interface EnvVarPair {
  name: string;
  value: string;
}

/** What runs in a task's or a buildpack staging's container. */
export interface JobSpec {
  image: string;
  /** Empty: the image's entrypoint. */
  command: string[];
  environment: EnvVarPair[];
  memoryMb: number;
  diskMb: number;
  cpuWeight: number;
  registry?: RegistryCredentials;
}

/** What a task and a staging share: whose they are, where they run, and where CC wants to hear their end. */
export interface RunOnce extends AppIdentity {
  namespace: string;
  completionCallback: string;
}

export interface DesiredTask extends RunOnce {
  taskGuid: string;
  name: string;
  spec: JobSpec;
}

export interface BuildpackInfo {
  name: string;
  key: string;
  url: string;
  skipDetect: boolean;
}

export type StagingLifecycle =
  | { type: 'docker'; image: string; registry?: RegistryCredentials }
  | {
      type: 'buildpack';
      appBitsDownloadUri: string;
      dropletUploadUri: string;
      buildpacks: BuildpackInfo[];
      buildpackCacheDownloadUri?: string;
      buildpackCacheUploadUri?: string;
      buildpackCacheChecksum?: string;
      buildpackCacheChecksumAlgorithm?: string;
    };

export interface DesiredStaging extends RunOnce {
  stagingGuid: string;
  environment: EnvVarPair[];
  memoryMb: number;
  diskMb: number;
  cpuWeight: number;
  lifecycle: StagingLifecycle;
}

/** How a task or staging ended, as CC is told. */
export interface TaskOutcome {
  failed: boolean;
  /**
   * Empty on success; else in Diego's words, e.g. `APP/TASK/migrate: Exited with status 3`, `… (out of
   * memory)`, `task was cancelled`.
   */
  failureReason: string;
}

/**
 * The staging error ids CC keeps (`BuildModel::STAGING_FAILED_REASONS`, app/models/runtime/build_model.rb:15,
 * minus the two CC raises itself), each shown with its own message (errors/v2.yml:636-679): the buildpack
 * lifecycle's exit codes 222, 223, 224, a pod no node could take for lack of resources or at all, and
 * StagingError (`Staging error: <message>`) for everything else.
 */
export type StagingErrorId =
  | 'StagingError'
  | 'NoAppDetectedError'
  | 'BuildpackCompileFailed'
  | 'BuildpackReleaseFailed'
  | 'InsufficientResources'
  | 'NoCompatibleCell';

/** CC's staging result (`build_completed` body), success or StagingError. */
export type StagingOutcome =
  | {
      failed: false;
      result: {
        lifecycle_type: 'docker' | 'buildpack';
        lifecycle_metadata: Record<string, unknown>;
        process_types: Record<string, string>;
        execution_metadata: string;
      };
    }
  | {
      failed: true;
      /** At most STAGING_MESSAGE_MAX characters. */
      message: string;
      /** StagingError when absent (as on outcomes recorded before the id was). */
      errorId?: StagingErrorId;
    };

/** A crash CC hears of through /internal/v4/apps/<process_guid>/crashed. */
export interface CrashReport {
  processGuid: string;
  instance: string;
  index: number;
  reason: string;
  exitStatus: number;
  exitDescription: string;
  crashCount: number;
  /** Unix seconds (Kubernetes keeps whole seconds); CC is told nanoseconds. */
  crashTimestamp: number;
}
