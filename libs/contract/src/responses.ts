/** Response bodies of the contract, built by hand where the exact bytes matter. */

/** One scheduling info as JSON text. Stored pre-serialised so GET /apps only concatenates. */
export function schedulingInfoJson(
  processGuid: string,
  guid: string,
  version: string,
  annotation: string,
): string {
  return JSON.stringify({ desired_lrp_key: { process_guid: processGuid }, guid, version, annotation });
}

/** GET /apps from pre-serialised entries: the array is always present. */
export function schedulingInfosBody(entries: readonly string[]): string {
  return `{"desired_lrp_scheduling_infos":[${entries.join(',')}]}`;
}

/** One instance as `/instances` shows it. */
export interface InstanceBodyRow {
  index: number;
  /** Nanoseconds, as decimal digits; anything else is sent as 0. */
  sinceNs: string;
  state: string;
  placementError?: string | undefined;
}

/**
 * `GET /apps/:guid/:version/instances`, as CC's instances client reads it (instances_client.rb). Built by
 * hand: `since` is nanoseconds, beyond a JSON number's safe integer range in JavaScript.
 */
export function instancesBody(processGuid: string, rows: readonly InstanceBodyRow[]): string {
  const items = rows.map(
    (i) =>
      `{"index":${i.index},"since":${/^\d+$/.test(i.sinceNs) ? i.sinceNs : '0'},"state":${JSON.stringify(i.state)}${
        i.placementError ? `,"placement_error":${JSON.stringify(i.placementError)}` : ''
      }}`,
  );
  return `{"process_guid":${JSON.stringify(processGuid)},"instances":[${items.join(',')}]}`;
}

/**
 * CC's apps client reads an error as `error.message` (apps_rest_client.rb, update_app). Also the shape of
 * the operator endpoints' errors.
 */
export interface ErrorBody {
  error: { message: string };
}

export function errorBody(message: string): ErrorBody {
  return { error: { message } };
}

/** CC's task and stager clients read a top-level `message` (task_client.rb, stager_client.rb). */
export interface MessageErrorBody {
  message: string;
}

/**
 * CC's instances client reads `error` as a string and takes a stopped process's answer as "no instances"
 * only when it contains "not found" (instances_client.rb, raise_non_404_error).
 */
export interface InstancesErrorBody {
  process_guid?: string;
  instances: [];
  error: string;
}

const TASK_OR_STAGING = /^\/(tasks|stage)(\/|$)/i;
const INSTANCES = /^\/apps\/[^/]+\/[^/]+\/instances\/?$/i;

/**
 * An error answer in the shape the client that calls `path` reads, so CC shows the reason rather than
 * `Runner error: ` with none, whichever layer refused (credentials, rate limit, body parser, route).
 */
export function errorBodyFor(
  path: string,
  message: string,
): ErrorBody | MessageErrorBody | InstancesErrorBody {
  if (TASK_OR_STAGING.test(path)) return { message };
  if (INSTANCES.test(path)) return { instances: [], error: message };
  return errorBody(message);
}
