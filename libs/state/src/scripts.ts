/**
 * The Lua scripts that change records atomically, without WATCH (which is per connection, and the API's
 * one connection is shared by concurrent requests).
 */
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { inboxEntryLua } from './inbox.js';

const shas = new Map<string, string>();

/**
 * Runs a script by its SHA1 (EVALSHA), sending its text only when the server lacks it (NOSCRIPT, after a
 * restart or a flush), so requests do not carry the script's text.
 */
export async function runScript(
  redis: Redis | Cluster,
  lua: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  let sha = shas.get(lua);
  if (!sha) {
    sha = createHash('sha1').update(lua).digest('hex');
    shas.set(lua, sha);
  }
  try {
    return await redis.evalsha(sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return redis.eval(lua, keys.length, ...keys, ...args);
  }
}

/** Lua that sets `g` to the next generation from counter `key`, never below `floor` (see NEXT_GENERATION). */
function nextGeneration(key: string, floor: string): string {
  return `local g = redis.call('INCR', ${key})
local floor = tonumber(${floor})
if g < floor then
  redis.call('SET', ${key}, ${floor})
  g = floor
end`;
}

/**
 * Lua reading a record's text `v` (see DESIRE): whether it is a desired one, and a desired one's
 * generation, which ends it.
 */
function isDesired(v: string): string {
  return `string.sub(${v}, 1, 19) == '{"state":"desired",'`;
}
function desiredGeneration(v: string): string {
  return `string.match(string.sub(${v}, -48), '"generation":(%d+)}$')`;
}

/**
 * Records a desire unless the LRP is already desired, with its generation (as NEXT_GENERATION's), its
 * scheduling info and the converge it asks for (inboxEntry), in one step.
 * KEYS: record, lrps set, scheduling infos hash, generation counter, scheduling infos version, converge
 * inbox. ARGV: the desired LRP as JSON, process guid, scheduling info, generation floor, new scheduling
 * infos version. Answers {1, generation} when recorded, {0, generation} when already desired.
 * Records are read by their text, not with cjson, which refuses what JSON.stringify writes for a lone
 * surrogate: every record the store writes starts with its state, and a desired one ends with its
 * generation (test/integration/redis/state-records.test.ts holds it).
 */
export const DESIRE = `
local cur = redis.call('GET', KEYS[1])
if cur and ${isDesired('cur')} then
  return {0, ${desiredGeneration('cur')}}
end
${nextGeneration('KEYS[4]', 'ARGV[4]')}
local gs = string.format('%.0f', g)
redis.call('SET', KEYS[1], '{"state":"desired","lrp":' .. ARGV[1] .. ',"generation":' .. gs .. '}')
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('SET', KEYS[5], ARGV[5])
redis.call('RPUSH', KEYS[6], ${inboxEntryLua('gs', 'ARGV[2]', true)})
return {1, gs}
`;

/**
 * Compare-and-set of a record, maintaining the set of records and the scheduling infos.
 * KEYS: record, lrps set, scheduling infos hash, scheduling infos version, converge inbox. ARGV: expected
 * current ('' = absent), new record, process guid, scheduling info op ('set' | 'del' | 'keep'), scheduling
 * info, new scheduling infos version, inbox entry ('' = none).
 */
export const CAS_RECORD = `
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
if ARGV[4] == 'set' then redis.call('HSET', KEYS[3], ARGV[3], ARGV[5])
elseif ARGV[4] == 'del' then redis.call('HDEL', KEYS[3], ARGV[3]) end
if ARGV[4] ~= 'keep' then redis.call('SET', KEYS[4], ARGV[6]) end
if ARGV[7] ~= '' then redis.call('RPUSH', KEYS[5], ARGV[7]) end
return 1
`;

/**
 * Lets a tombstone expire once its workload is confirmed gone, if nothing replaced it meanwhile.
 * KEYS: record. ARGV: expected current, seconds.
 */
export const EXPIRE_IF_UNCHANGED = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
  return 1
end
return 0
`;

/**
 * The sync's changes to the scheduling infos of LRPs it found stopped: an entry kept while the workload
 * exists, or removed once it is gone. An LRP desired again since the sync read the records is skipped:
 * its entry is the new desire's and must stay.
 * KEYS: scheduling infos hash, scheduling infos version, then one record per change. ARGV: the new
 * scheduling infos version, then per change, process guid and entry ('' = remove).
 */
export const LIST_STOPPED_WHILE_PRESENT = `
local changed = 0
for i = 3, #KEYS do
  local raw = redis.call('GET', KEYS[i])
  if not (raw and ${isDesired('raw')}) then
    local pg = ARGV[2 * i - 4]
    local entry = ARGV[2 * i - 3]
    if entry == '' then changed = changed + redis.call('HDEL', KEYS[1], pg)
    elseif redis.call('HGET', KEYS[1], pg) ~= entry then
      redis.call('HSET', KEYS[1], pg, entry)
      changed = changed + 1
    end
  end
end
if changed > 0 then redis.call('SET', KEYS[2], ARGV[1]) end
return 1
`;

/**
 * Compare-and-set of a task or staging record, with its membership in a set and an optional expiry.
 * KEYS: record, set. ARGV: expected current ('' = absent), new record, member, set op ('add' | 'rem' |
 * 'none'), expiry in seconds ('0' = none).
 */
export const CAS_WITH_SET = `
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[4] == 'add' then redis.call('SADD', KEYS[2], ARGV[3])
elseif ARGV[4] == 'rem' then redis.call('SREM', KEYS[2], ARGV[3]) end
if ARGV[5] ~= '0' then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[5])) end
return 1
`;

/**
 * The next generation: INCR, but never below ARGV[1], the time in microseconds. The counter lives only in
 * Redis while the stamps it hands out live on for ever on the Deployments: after a flush (or a failover
 * to a replica without it) a counter restarting at 1 would hand out numbers already stamped on
 * Deployments of other specs, and a converge would take such a Deployment for up to date. Tied to the
 * clock, generations keep increasing across any loss (unless more than a million are taken a second).
 * KEYS: counter. ARGV: floor.
 */
export const NEXT_GENERATION = `
${nextGeneration('KEYS[1]', 'ARGV[1]')}
return g
`;

/** Extends a lock only if this owner still holds it. KEYS: lock. ARGV: owner, ttl in ms. */
export const EXTEND_LOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/** Releases a lock only if this owner still holds it. KEYS: lock. ARGV: owner. */
export const RELEASE_LOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * What the sync needs of each record, read in Redis so the records need not cross: a desired record's
 * generation (a number; see DESIRE for the text it is read from), '' for a record gone, anything else
 * whole. KEYS: records.
 */
export const RECORD_SUMMARIES = `
local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.call('GET', k)
  local g = v and ${isDesired('v')} and ${desiredGeneration('v')}
  if g then out[i] = tonumber(g) elseif v then out[i] = v else out[i] = '' end
end
return out
`;

/** Sets a number unless it already holds a greater one. KEYS: the key. ARGV: the number. */
export const KEEP_LATER = `
local cur = tonumber(redis.call('GET', KEYS[1]))
if cur and cur >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`;

// --- The fenced cache (see cache-writer.ts) -------------------------------------------------------------

/**
 * Lua that refuses a cache write unless its token is at least the fence (answers 0) and the cache's epoch
 * is the writer's (answers -1: Redis lost its data, or the cache was claimed again since), then raises the
 * fence to the token. KEYS[1]: fence, KEYS[2]: epoch. ARGV[1]: token, ARGV[2]: the writer's epoch.
 */
const FENCE_CHECK = `local fence = tonumber(redis.call('GET', KEYS[1]) or '-1')
local token = tonumber(ARGV[1])
if token < fence then return 0 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -1 end
if token > fence then redis.call('SET', KEYS[1], ARGV[1]) end`;

/**
 * Claims the cache for a leader's term: refused ({0, fence}) below the fence; otherwise raises the fence
 * and answers {1, epoch}, a new epoch when the token is higher than the fence or none is set (a flush),
 * else the current one (a second writer of the same term shares it).
 * KEYS: fence, epoch. ARGV: token, a new random epoch.
 */
export const CACHE_CLAIM = `
local fence = tonumber(redis.call('GET', KEYS[1]) or '-1')
local token = tonumber(ARGV[1])
if token < fence then return {0, redis.call('GET', KEYS[1])} end
local cur = redis.call('GET', KEYS[2])
if token == fence and cur then return {1, cur} end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return {1, ARGV[2]}
`;

/**
 * A fenced change of one hash: sets field/value pairs ('set') or deletes fields ('del'). Answers 1, or
 * 0 / -1 as FENCE_CHECK. KEYS: fence, epoch, hash. ARGV: token, epoch, op, then the fields (and values).
 */
export const CACHE_HASH_WRITE = `
${FENCE_CHECK}
if #ARGV > 3 then
  if ARGV[3] == 'set' then redis.call('HSET', KEYS[3], unpack(ARGV, 4))
  else redis.call('HDEL', KEYS[3], unpack(ARGV, 4)) end
end
return 1
`;

/**
 * A fenced commit of a snapshot: renames the written snapshot over the instances hash (or deletes the
 * hash when the snapshot is empty) and sets the meta fields. Answers 1, 0 / -1 as FENCE_CHECK, or -2 when
 * the snapshot lacks fields it was given (it expired, whole or before a later chunk).
 * KEYS: fence, epoch, instances, snapshot, meta hash. ARGV: token, epoch, the number of fields the
 * snapshot was given ('0': none, empty the hash), then meta field/value pairs.
 */
export const CACHE_COMMIT_SNAPSHOT = `
${FENCE_CHECK}
if ARGV[3] ~= '0' then
  -- A key that expired before (or between) its chunks holds fewer fields than were written.
  if redis.call('HLEN', KEYS[4]) ~= tonumber(ARGV[3]) then return -2 end
  redis.call('RENAME', KEYS[4], KEYS[3])
  redis.call('PERSIST', KEYS[3])
else
  redis.call('DEL', KEYS[3], KEYS[4])
end
if #ARGV > 3 then redis.call('HSET', KEYS[5], unpack(ARGV, 4)) end
return 1
`;
