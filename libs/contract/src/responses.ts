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

export interface ErrorBody {
  error: { message: string };
}

export function errorBody(message: string): ErrorBody {
  return { error: { message } };
}
