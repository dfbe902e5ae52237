/** The body of CC's update (`POST /apps/:process_guid`) of one LRP. */
export function updateBody(
  lrp: { guid: string; version: string },
  update: Record<string, unknown>,
): Record<string, unknown> {
  return { guid: lrp.guid, version: lrp.version, update };
}
