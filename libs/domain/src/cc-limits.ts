/**
 * How long each string CC stores from our callbacks may be, in one place: from CC's code and migrations at
 * cloud_controller_ng `9b783b0126` (Sequel's `String` without a size is `varchar(255)`; PostgreSQL and MySQL
 * count characters), and Diego's own bounds where ours follow Diego's. The integration tests' stand-in CC
 * checks every body against CC's rules (test/support/cc-rules.ts).
 */

/** `builds.error_description`: db/migrations/20170411172945_add_error_description_to_builds.rb:3 (varchar(255)). */
export const CC_BUILD_ERROR_DESCRIPTION_MAX = 255;

/**
 * What CC puts before a StagingError's message in `builds.error_description`: `BuildModel#fail_to_stage!`
 * (app/models/runtime/build_model.rb:94) fills the template `Staging error: %s` (errors/v2.yml:639).
 */
export const CC_STAGING_ERROR_PREFIX = 'Staging error: ';

/** A staging error's message: 240 characters, so CC's prefixed description fits its column. */
export const STAGING_MESSAGE_MAX = CC_BUILD_ERROR_DESCRIPTION_MAX - CC_STAGING_ERROR_PREFIX.length;

/**
 * `tasks.failure_reason`: db/migrations/20160914165525_migrate_v2_app_data_to_v3.rb:158 and
 * 20160127192643_add_result_to_tasks.rb:3 (varchar(4096)), stored as sent (task_completion_handler.rb:17).
 */
export const CC_TASK_FAILURE_REASON_MAX = 4096;

/**
 * A crash's `exit_description` is cut to this many characters plus ` (truncated)` before it goes into
 * `events.metadata` (app/repositories/mixins/truncation_mixin.rb:4, process_event_repository.rb:103,
 * app_event_repository.rb:22); the rest of the body is stored there as sent.
 */
export const CC_CRASH_DESCRIPTION_TRUNCATED_AT = 10_000;

/**
 * `events.metadata` is `text` (db/migrations/20131024203451_use_text_for_metadata_in_events.rb:10): on
 * MySQL at most 65,535 bytes of JSON.
 */
export const CC_EVENT_METADATA_MAX_BYTES = 65_535;

/**
 * Diego's bound on what it tells CC of a task's failure or an instance's crash: BBS keeps 1,024 of it
 * (bbs db/sqldb/task_db.go:419, actual_lrp_db.go:493). Task `failure_reason` and crash `exit_description`
 * keep to it too, well inside CC's columns.
 */
export const DIEGO_REASON_MAX = 1024;

/** The mark of a cut string. */
const CUT = '…';

/**
 * `text` in at most `max` characters (Unicode code points, as the databases count; a surrogate pair is
 * never split): unchanged when it fits, else its start and `…`.
 */
export function boundText(text: string, max: number): string {
  // Fewer UTF-16 units than max means fewer code points too: the common case costs nothing.
  if (text.length <= max) return text;
  const points = Array.from(text);
  if (points.length <= max) return text;
  return points.slice(0, Math.max(0, max - CUT.length)).join('') + CUT;
}
