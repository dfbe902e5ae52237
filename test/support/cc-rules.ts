/**
 * CC's side of our callbacks, written from cloud_controller_ng at `9b783b0126` (each rule names the file
 * and line it follows; `git -C <mirror> show 9b783b0126:<file>`): what CC's internal-API handlers read
 * from a task completion, a staging completion and a crash report, the types they check (Membrane
 * schemas) or need, and whether what they store fits its column after CC's own prefixing and truncation.
 * checkCallback answers the status CC would give and every rule the body breaks; the stand-in CC
 * (fake-cc.ts) applies it to each callback it receives. Membrane record schemas allow keys they do not
 * name (Diego's bodies carry such keys too), so extra keys are not a problem here.
 */
import {
  CC_BUILD_ERROR_DESCRIPTION_MAX,
  CC_CRASH_DESCRIPTION_TRUNCATED_AT,
  CC_EVENT_METADATA_MAX_BYTES,
  CC_TASK_FAILURE_REASON_MAX,
} from '@opi/domain';

export interface CcVerdict {
  /** What CC answers; it answers 200 to many bodies it then fails to store (see problems). */
  status: number;
  /** Each rule broken, with the CC code it comes from; empty when CC takes and stores the body. */
  problems: string[];
}

type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Characters as PostgreSQL and MySQL count them (code points). */
const chars = (s: string): number => [...s].length;
/** A JSON number Ruby's JSON parser reads as an Integer (no fraction, no exponent). */
const isInteger = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v);

/** The varchar(255) every `String` column without a size is (Sequel's default). */
const CC_ERROR_ID_MAX = 255; // db/migrations/20170420184502_add_error_id_to_build.rb:3

/** app/models/runtime/build_model.rb:15-16, BuildModel::STAGING_FAILED_REASONS. */
const STAGING_FAILED_REASONS = [
  'StagerError',
  'StagingError',
  'StagingTimeExpired',
  'NoAppDetectedError',
  'BuildpackCompileFailed',
  'BuildpackReleaseFailed',
  'InsufficientResources',
  'NoCompatibleCell',
];

/** Each id's message template, errors/v2.yml (the line of its `message:`). */
const ERROR_TEMPLATES: Record<string, string> = {
  StagingError: 'Staging error: %s', // errors/v2.yml:639
  NoAppDetectedError: 'An app was not successfully detected by any available buildpack', // :649
  BuildpackCompileFailed: 'App staging failed in the buildpack compile phase', // :654
  BuildpackReleaseFailed: 'App staging failed in the buildpack release phase', // :659
  StagingTimeExpired: 'Staging time expired: %s', // :669
  InsufficientResources: 'Insufficient resources', // :674
  NoCompatibleCell: 'Found no compatible cell', // :679
  StagerError: 'Stager error: %s', // :689
};

/**
 * `ApiError.new_from_details(id, message).message` (lib/cloud_controller/errors/api_error.rb:18-26):
 * Ruby's sprintf fills `%s` and ignores an argument the template has no place for.
 */
function errorDescription(id: string, message: string): string {
  const template = ERROR_TEMPLATES[id] ?? ERROR_TEMPLATES['StagingError'] ?? '%s';
  return template.replace('%s', message);
}

/** JSON.parse as MultiJson.load; undefined when CC's parser would refuse it. */
function parse(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}

/** POST /internal/v4/tasks/:task_guid/completed (app/controllers/internal/task_completion_controller.rb). */
function taskCompletion(taskGuid: string, body: unknown): CcVerdict {
  const problems: string[] = [];
  if (!isRecord(body)) {
    return { status: 400, problems: ['task_completion_controller.rb:30-34: the body is not a JSON object'] };
  }
  if (body['task_guid'] !== taskGuid) {
    return {
      status: 400,
      problems: ['task_completion_controller.rb:21: task_guid must be the task in the path (InvalidRequest)'],
    };
  }
  // task_completion_handler.rb:39-44: {failed: bool, failure_reason: String}; anything else is stored as
  // "Malformed task response from Diego" (:9), the real reason lost.
  if (typeof body['failed'] !== 'boolean') {
    problems.push('task_completion_handler.rb:41: failed must be a boolean');
  }
  const reason = body['failure_reason'];
  if (typeof reason !== 'string') {
    problems.push('task_completion_handler.rb:42: failure_reason must be a string');
  } else if (body['failed'] === true && chars(reason) > CC_TASK_FAILURE_REASON_MAX) {
    // task_completion_handler.rb:17,22: saved as sent; the save fails and is only logged (:24-25).
    problems.push(
      `db/migrations/20160914165525_migrate_v2_app_data_to_v3.rb:158: tasks.failure_reason holds ` +
        `${CC_TASK_FAILURE_REASON_MAX} characters, not ${chars(reason)}`,
    );
  }
  return { status: 200, problems };
}

function stagingFailure(error: unknown): string[] {
  // lib/cloud_controller/diego/staging_completion_handler.rb:165-174: {error: {id: String, message: String}}.
  if (!isRecord(error) || typeof error['id'] !== 'string' || typeof error['message'] !== 'string') {
    return [
      'staging_completion_handler.rb:165-174: error must be {id: String, message: String} (InvalidRequest)',
    ];
  }
  const { id, message } = error as { id: string; message: string };
  const problems: string[] = [];
  if (!STAGING_FAILED_REASONS.includes(id)) {
    problems.push(`build_model.rb:90: error.id ${id} is not one CC keeps; it would store StagingError`);
  }
  if (chars(id) > CC_ERROR_ID_MAX) {
    problems.push(
      `db/migrations/20170420184502_add_error_id_to_build.rb:3: builds.error_id holds 255 characters`,
    );
  }
  // build_model.rb:94 stores the template filled with the message; a failed save is only logged
  // (staging_completion_handler.rb:64-71), CC answers 200 and the build stays STAGING.
  const description = errorDescription(STAGING_FAILED_REASONS.includes(id) ? id : 'StagingError', message);
  if (chars(description) > CC_BUILD_ERROR_DESCRIPTION_MAX) {
    problems.push(
      `db/migrations/20170411172945_add_error_description_to_builds.rb:3: builds.error_description holds ` +
        `${CC_BUILD_ERROR_DESCRIPTION_MAX} characters, not ${chars(description)} ("${description.slice(0, 40)}…")`,
    );
  }
  return problems;
}

/** The success schemas: buildpack/staging_completion_handler.rb:12-40, docker/staging_completion_handler.rb:13-26. */
function stagingResult(result: unknown): string[] {
  // staging_completion_handler.rb:81-83: the result must be a Hash.
  if (!isRecord(result)) return ['staging_completion_handler.rb:81-83: result must be an object'];
  const problems: string[] = [];
  const type = result['lifecycle_type'];
  if (type !== 'buildpack' && type !== 'docker') {
    problems.push('lifecycle_type must be "buildpack" or "docker" (the handler is chosen by the build)');
  }
  if (typeof result['execution_metadata'] !== 'string') {
    problems.push('buildpack/staging_completion_handler.rb:16: execution_metadata must be a String');
  }
  // :86 defaults a missing process_types to {}; :29 dict(Symbol, String).
  const pt = result['process_types'] ?? {};
  if (!isRecord(pt) || !Object.values(pt).every((v) => typeof v === 'string')) {
    problems.push('buildpack/staging_completion_handler.rb:29: process_types must map names to Strings');
  }
  const md = result['lifecycle_metadata'];
  if (!isRecord(md)) {
    problems.push('buildpack/staging_completion_handler.rb:18: lifecycle_metadata must be an object');
  } else if (type === 'buildpack') {
    if (typeof md['detected_buildpack'] !== 'string') {
      problems.push('buildpack/staging_completion_handler.rb:20: detected_buildpack must be a String');
    }
    if (md['buildpack_key'] !== undefined && typeof md['buildpack_key'] !== 'string') {
      problems.push('buildpack/staging_completion_handler.rb:19: buildpack_key must be a String');
    }
  } else if (type === 'docker' && typeof md['docker_image'] !== 'string') {
    problems.push('docker/staging_completion_handler.rb:21: docker_image must be a String');
  }
  return problems;
}

/** POST /internal/v3/staging/:staging_guid/build_completed (app/controllers/internal/staging_completion_controller.rb). */
function stagingCompletion(body: unknown): CcVerdict {
  if (!isRecord(body)) {
    return {
      status: 400,
      problems: ['staging_completion_controller.rb:127-130: the body is not a JSON object'],
    };
  }
  if ('failed' in body) {
    // :58-60: a `failed` key makes CC read the body as a BBS task callback, which ours is not.
    return {
      status: 500,
      problems: ['staging_completion_controller.rb:58: a body with `failed` is read as a BBS task'],
    };
  }
  // lib/cloud_controller/diego/staging_completion_handler.rb:29: an error, else a result.
  const problems =
    body['error'] !== undefined ? stagingFailure(body['error']) : stagingResult(body['result']);
  const refused = problems.some(
    (p) => p.includes('InvalidRequest') || p.startsWith('staging_completion_handler.rb:81'),
  );
  return { status: refused ? 400 : 200, problems };
}

/** Ruby's String#truncate(10000, omission: ' (truncated)'), app/repositories/mixins/truncation_mixin.rb:3-8. */
function truncated(s: string): string {
  const points = [...s];
  const omission = ' (truncated)';
  if (points.length <= CC_CRASH_DESCRIPTION_TRUNCATED_AT) return s;
  return points.slice(0, CC_CRASH_DESCRIPTION_TRUNCATED_AT - omission.length).join('') + omission;
}

/**
 * Diego's AppCrashedRequest (runtimeschema cc_messages/app_crashed.go, as tps sends it, tps
 * watcher/watcher.go:120-128): the keys CC stores from it and their types.
 */
const CRASH_KEYS: [string, 'string' | 'integer'][] = [
  ['instance', 'string'],
  ['index', 'integer'],
  ['cell_id', 'string'],
  ['reason', 'string'],
  ['exit_status', 'integer'],
  ['exit_description', 'string'],
  ['crash_count', 'integer'],
  ['crash_timestamp', 'integer'],
];

/** 2001-09-09 in Unix nanoseconds: any crash_timestamp below it is in another unit. */
const NANOS_FLOOR = 1e18;

/** POST /internal/v4/apps/:process_guid/crashed (app/controllers/internal/app_crashed_controller.rb). */
function crashReport(processGuid: string, body: unknown): CcVerdict {
  if (!isRecord(body)) {
    return { status: 400, problems: ['app_crashed_controller.rb:29-33: the body is not a JSON object'] };
  }
  const problems: string[] = [];
  // lib/cloud_controller/diego/process_guid.rb:12-18: the process is the first 36 characters, the version after the dash.
  if (processGuid.length < 38 || processGuid[36] !== '-') {
    problems.push(`process_guid.rb:13,17: ${processGuid} is not <process guid>-<version>`);
  }
  // process_event_repository.rb:103 calls String#truncate on it: anything else is a 500.
  if (typeof body['exit_description'] !== 'string') {
    return { status: 500, problems: ['process_event_repository.rb:103: exit_description must be a String'] };
  }
  for (const [key, type] of CRASH_KEYS) {
    const v = body[key];
    if (type === 'string' ? typeof v !== 'string' : !isInteger(v))
      problems.push(`app_crashed.go: ${key} must be an ${type}`);
  }
  const ts = body['crash_timestamp'];
  if (isInteger(ts) && (ts as number) < NANOS_FLOOR) {
    problems.push("tps watcher.go:127: crash_timestamp is Unix nanoseconds (Diego's ActualLRP since)");
  }
  // app_crashed_controller.rb:18,20-21: the whole body (plus version, exit_description truncated) is an
  // event's metadata (process_event_repository.rb:103-111), a slice of it another's (app_event_repository.rb:21-22).
  const metadata = {
    ...body,
    exit_description: truncated(body['exit_description']),
    version: processGuid.slice(37),
  };
  const bytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  if (bytes > CC_EVENT_METADATA_MAX_BYTES) {
    problems.push(
      `db/migrations/20131024203451_use_text_for_metadata_in_events.rb:10: events.metadata (text) holds ` +
        `${CC_EVENT_METADATA_MAX_BYTES} bytes on MySQL, not ${bytes}`,
    );
  }
  return { status: 200, problems };
}

/** The verdict on one request to CC's internal API, or undefined for a path that is not a callback. */
export function checkCallback(method: string, path: string, rawBody: string): CcVerdict | undefined {
  if (method !== 'POST') return undefined;
  const task = /^\/internal\/v4\/tasks\/([^/]+)\/completed$/.exec(path);
  const staging = /^\/internal\/v3\/staging\/([^/]+)\/build_completed$/.exec(path);
  const crash = /^\/internal\/v4\/apps\/([^/]+)\/crashed$/.exec(path);
  if (!task && !staging && !crash) return undefined;
  const body = parse(rawBody);
  if (body === undefined)
    return { status: 400, problems: [`${path}: the body is not JSON (MessageParseError)`] };
  if (task) return taskCompletion(decodeURIComponent(task[1] ?? ''), body);
  if (staging) return stagingCompletion(body);
  return crashReport(decodeURIComponent(crash?.[1] ?? ''), body);
}
