/** The LRPs the benchmark desires: CC-like bodies with deterministic guids, and the LRPs they translate to. */
import { desireLrpSchema, toDesiredLrp } from '@opi/contract';
import { desireBody as ccDesireBody } from '@opi/contract/testing';
import type { DesiredLrp } from '@opi/domain';

/** The version of every LRP the bench desires. */
export const VERSION = 'v1';

/** The suites' CC-like desire body, each app named after the end of its guid (the part uuid() counts in). */
export function desireBody(guid: string, version: string): Record<string, unknown> {
  return ccDesireBody(guid, version, { app_name: `app-${guid.slice(-8)}` });
}

/** The LRP of `guid` as the API reads its desire body, in `namespace`, running `instances`. */
export function desiredLrp(guid: string, namespace: string, instances = 1): DesiredLrp {
  return toDesiredLrp(desireLrpSchema.parse({ ...desireBody(guid, VERSION), instances }), {
    namespace,
    dropletRegistry: 'registry.example',
  });
}
