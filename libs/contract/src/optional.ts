/**
 * Optional fields as CC sends them. CC serialises with MultiJson on Oj, so a Ruby nil goes on the wire
 * as `null` (a public image's `registry_username`, a port check's `health_check_http_endpoint`, a first
 * staging's `buildpack_cache_checksum`): an optional field that is `null` means the same as one left out.
 * Required fields are not wrapped, so a `null` there is still refused with the field's name.
 */
import { z } from 'zod';

/** An optional field: absent or `null` both read as `undefined`. */
export function optional<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((v): z.output<T> | undefined => v ?? undefined);
}

/** An optional field with a default: absent or `null` both read as `make()` (a fresh value each time). */
export function withDefault<T extends z.ZodType>(schema: T, make: () => z.output<T>) {
  return schema.nullish().transform((v): z.output<T> => v ?? make());
}

/** Optional text of at most `max` characters: absent or `null` read as "". */
export function text(max: number) {
  return withDefault(z.string().max(max), () => '');
}
