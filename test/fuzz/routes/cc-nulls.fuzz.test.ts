/**
 * CC's nulls over every route that takes a body: any field CC may leave out may come as `null` and must
 * mean the same as absent (accepted, recorded alike), any such field left out is accepted, and a required
 * field set to `null` is a 400 naming it. Which fields CC may leave out is asked of the contract's schemas
 * (schema-fields.ts), so the list cannot drift from them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { describeIssues } from '@opi/contract';
import { type JsonPath, formatPath, setPath } from '../../support/body-paths.js';
import { namesField, pickField } from '../../support/schema-fields.js';
import { fuzz } from '../run.js';
import {
  BODY_ROUTES,
  errorMessage,
  fieldName,
  freshIdentity,
  nullAt,
  omitSome,
  validBodies,
} from './body-routes.js';
import { check, startApi, stopApi } from './fuzzed-api.js';

beforeAll(startApi);
afterAll(stopApi);

/** A few fields at a time mostly; sometimes many, down to a body with nothing left that CC may omit. */
const fewPicks = fc.array(fc.nat(), { minLength: 1, maxLength: 3 });
const manyPicks = fc.array(fc.nat(), { minLength: 4, maxLength: 80 });

const tried = new Map<string, Set<string>>();

function noteTried(kind: string, paths: readonly JsonPath[]): void {
  const names = tried.get(kind) ?? new Set<string>();
  for (const p of paths) names.add(fieldName(p));
  tried.set(kind, names);
}

function reportTried(kind: string): void {
  const names = [...(tried.get(kind) ?? [])].sort();
  process.stdout.write(`  ${kind}: ${names.length} distinct fields: ${names.join(', ')}\n`);
}

describe('CC nulls: optional fields null or left out, required fields null', () => {
  const routes = BODY_ROUTES.map((r) => [r.name, r] as const);

  it.each(routes)(
    '%s: the schema reads any field CC may omit, set to null, as left out; a required one null is refused naming it',
    async (name, route) => {
      const kind = `schema ${name}`;
      await fuzz(
        kind,
        fc.property(validBodies(route), fc.oneof(fewPicks, manyPicks), fc.nat(), (raw, picks, pick) => {
          const base = route.withIdentity(raw, freshIdentity());
          const { paths, omitted } = omitSome(route.schema, base, picks);
          noteTried(kind, paths);
          if (paths.length) {
            const nulled = route.schema.safeParse(nullAt(base, paths));
            if (!nulled.success) {
              throw new Error(
                `null at ${paths.map(formatPath).join(', ')} refused (left out it is accepted): ${describeIssues(nulled.error)}`,
              );
            }
            try {
              expect(nulled.data).toEqual(route.schema.parse(omitted));
            } catch (err) {
              throw new Error(
                `null at ${paths.map(formatPath).join(', ')} read otherwise than left out:\n${(err as Error).message}`,
              );
            }
          }
          const path = pickField(route.schema, base, pick, 'required');
          if (path === undefined) return;
          const r = route.schema.safeParse(setPath(base, path, null));
          if (r.success) throw new Error(`required ${formatPath(path)} accepted as null`);
          const message = describeIssues(r.error);
          if (!namesField(message, path)) {
            throw new Error(`required ${formatPath(path)} as null: the message does not name it: ${message}`);
          }
        }),
        200,
      );
      reportTried(kind);
    },
    120_000,
  );

  it.each(routes)(
    '%s: any field CC may omit, sent as null, is accepted and recorded as if left out',
    async (name, route) => {
      const kind = `null ${name}`;
      await fuzz(
        kind,
        fc.asyncProperty(
          validBodies(route),
          fc.oneof({ arbitrary: fewPicks, weight: 4 }, { arbitrary: manyPicks, weight: 1 }),
          async (raw, picks) => {
            const a = freshIdentity();
            const b = freshIdentity();
            const { paths, omitted } = omitSome(route.schema, route.withIdentity(raw, a), picks);
            if (!paths.length) return;
            noteTried(kind, paths);
            const where = paths.map(formatPath).join(', ');
            await route.prepare?.(a);
            await route.prepare?.(b);
            const left = await check(route.request(omitted, a));
            if (left?.status !== route.ok) {
              throw new Error(`without ${where}: ${left?.status} ${left?.body.slice(0, 500)}`);
            }
            const nulled = await check(route.request(nullAt(route.withIdentity(raw, b), paths), b));
            if (nulled?.status !== route.ok) {
              throw new Error(`with null at ${where}: ${nulled?.status} ${nulled?.body.slice(0, 500)}`);
            }
            const [withNull, without] = [await route.state(b), await route.state(a)];
            if (without === undefined) throw new Error(`without ${where}: nothing recorded`);
            try {
              expect(withNull).toEqual(without);
            } catch (err) {
              throw new Error(
                `null at ${where} recorded otherwise than left out:\n${(err as Error).message}`,
              );
            }
          },
        ),
        80,
      );
      reportTried(kind);
    },
    300_000,
  );

  it.each(routes)(
    '%s: any fields CC may omit, left out (down to a minimal body), are accepted',
    async (name, route) => {
      const kind = `omitted ${name}`;
      await fuzz(
        kind,
        fc.asyncProperty(validBodies(route), fc.oneof(fewPicks, manyPicks), async (raw, picks) => {
          const id = freshIdentity();
          const { paths, omitted } = omitSome(route.schema, route.withIdentity(raw, id), picks);
          noteTried(kind, paths);
          await route.prepare?.(id);
          const a = await check(route.request(omitted, id));
          if (a?.status !== route.ok) {
            throw new Error(
              `without ${paths.map(formatPath).join(', ')}: ${a?.status} ${a?.body.slice(0, 500)}`,
            );
          }
          if ((await route.state(id)) === undefined) throw new Error('accepted, but nothing recorded');
        }),
        50,
      );
      reportTried(kind);
    },
    300_000,
  );

  it.each(routes)(
    '%s: a required field set to null is a 400 whose message names the field',
    async (name, route) => {
      const kind = `required null ${name}`;
      await fuzz(
        kind,
        fc.asyncProperty(validBodies(route), fc.nat(), async (raw, pick) => {
          const id = freshIdentity();
          const base = route.withIdentity(raw, id);
          const path = pickField(route.schema, base, pick, 'required');
          if (path === undefined) return;
          noteTried(kind, [path]);
          await route.prepare?.(id);
          const before = await route.state(id);
          const a = await check(route.request(setPath(base, path, null), id));
          if (a?.status !== 400) {
            throw new Error(`required ${formatPath(path)} as null: ${a?.status} ${a?.body.slice(0, 500)}`);
          }
          const message = errorMessage(a);
          if (!namesField(message, path)) {
            throw new Error(`required ${formatPath(path)} as null: the message does not name it: ${message}`);
          }
          // check() saw no write; the record (an update's LRP) is as it was.
          expect(await route.state(id)).toEqual(before);
        }),
        60,
      );
      reportTried(kind);
    },
    300_000,
  );
});
