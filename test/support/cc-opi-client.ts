/**
 * Cloud Controller's OPI clients as a test model: each request as CC sends it and each answer read the
 * way CC reads it (which statuses it branches on, where it takes a message from, what it raises).
 * Modelled on cloud_controller_ng at 9b783b0126, lib/cloud_controller/opi/{apps_rest_client,
 * instances_client,task_client,stager_client,helpers}.rb ("CC" below), sent the way Ruby's HTTPClient
 * 2.8.3 sends it. Replays test/replay/corpus against the real service (test/integration/scenarios/cc-replay.test.ts).
 */
import { request as httpRequest } from 'node:http';

export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'DELETE';

export interface CcRequest {
  method: HttpMethod;
  path: string;
  /** The value CC's MultiJson.dump serialised; sent as JSON.stringify's bytes (Oj may escape differently, same value). */
  body?: unknown;
}

export interface Answer {
  status: number;
  body: string;
}

/** What one client method returned, with the last answer it read. */
export interface CcResult<T> {
  answer: Answer;
  outcome: T;
}

/** CC process fields the instances client looks at (instances_client.rb:66-68). */
export interface CcProcess {
  state: 'STARTED' | 'STOPPED';
  instances: number;
}

/** OPI::InstancesClient::ActualLRP (instances_client.rb:25-39), without the fixed net info. */
export interface ActualLrp {
  index: unknown;
  process_guid: unknown;
  state: unknown;
  since: unknown;
  placement_error: unknown;
}

// ---------------------------------------------------------------------------------------------------
// Errors CC raises. Each carries the answer that caused it.

export class CcClientError extends Error {
  answer?: Answer;
}

export type CcApiErrorName = 'RunnerError' | 'TaskError';

/** errors/v2.yml:702-704 and 717-719: "Runner error: %s", "Task failed: %s". */
const MESSAGE_FORMAT: Record<CcApiErrorName, string> = {
  RunnerError: 'Runner error: ',
  TaskError: 'Task failed: ',
};

/**
 * CloudController::Errors::ApiError.new_from_details(name, reason). Ruby's format('%s', nil) is '', so
 * a reason CC could not find reads "Runner error: " (kept as `reason` '').
 */
export class CcApiError extends CcClientError {
  override readonly name: CcApiErrorName;
  readonly reason: string;
  constructor(name: CcApiErrorName, reason: unknown) {
    const text = rubyToS(reason);
    super(`${MESSAGE_FORMAT[name]}${text}`);
    this.name = name;
    this.reason = text;
  }
}

/** OPI::InstancesClient::Error (instances_client.rb:10,88-90): the answer's `error`, retried. */
export class InstancesError extends CcClientError {
  override readonly name = 'InstancesError';
}

/** OPI::InstancesClient::NotRunningProcessError (instances_client.rb:11,92-97): not retried. */
export class NotRunningProcessError extends CcClientError {
  override readonly name = 'NotRunningProcessError';
}

/** JSON::ParserError: Ruby's JSON.parse of a body that is not JSON (an empty body included). */
export class JsonParseError extends CcClientError {
  override readonly name = 'JsonParseError';
}

/** A NoMethodError or TypeError in CC's code, e.g. `nil.message` when the body lacks a field. */
export class RubyError extends CcClientError {
  override readonly name = 'RubyError';
  constructor(
    readonly rubyClass: 'NoMethodError' | 'TypeError',
    message: string,
  ) {
    super(`${rubyClass}: ${message}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Ruby semantics used below.

type RubyHash = Record<string, unknown>;

function isHash(v: unknown): v is RubyHash {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** String interpolation / format('%s'): nil → '', a string as is, anything else roughly as Ruby prints it. */
function rubyToS(v: unknown): string {
  if (v === null || v === undefined) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Ruby truthiness: only nil and false are false ("" and 0 are true). */
function truthy(v: unknown): boolean {
  return v !== null && v !== undefined && v !== false;
}

/** ActiveSupport's blank?: nil, false, whitespace-only strings, empty arrays and hashes. */
function blank(v: unknown): boolean {
  if (v === null || v === undefined || v === false) return true;
  if (typeof v === 'string') return /^\s*$/.test(v);
  if (Array.isArray(v)) return v.length === 0;
  if (isHash(v)) return Object.keys(v).length === 0;
  return false;
}

/** What CC's instances reporter gives `cf app` for one index (uptime and since left out). */
export interface ReportedInstance {
  state: string;
  details?: unknown;
}

/**
 * InstancesReporter#all_instances_for_app (lib/cloud_controller/diego/reporters/instances_reporter.rb:20-44)
 * on what lrp_instances returned: indexes at or above the process's instances skipped, each state
 * translated by LrpStateTranslator (123-137: UNCLAIMED with a present placement_error is DOWN), the
 * placement_error as `details` when present, and every index not reported DOWN
 * (reporter_mixins.rb:10-21, fill_unreported_instances_with_down_instances).
 */
export function reportedInstances(
  lrps: readonly ActualLrp[],
  process: CcProcess,
): Map<number, ReportedInstance> {
  const out = new Map<number, ReportedInstance>();
  for (const lrp of lrps) {
    if (typeof lrp.index !== 'number' || lrp.index >= process.instances) continue;
    const placed = !blank(lrp.placement_error);
    const state =
      lrp.state === 'RUNNING'
        ? 'RUNNING'
        : lrp.state === 'CLAIMED'
          ? 'STARTING'
          : lrp.state === 'UNCLAIMED'
            ? placed
              ? 'DOWN'
              : 'STARTING'
            : lrp.state === 'CRASHED'
              ? 'CRASHED'
              : 'UNKNOWN';
    out.set(lrp.index, { state, ...(placed ? { details: lrp.placement_error } : {}) });
  }
  for (let i = 0; i < process.instances; i++) if (!out.has(i)) out.set(i, { state: 'DOWN' });
  return out;
}

/** JSON.parse(resp.body): json 2.x takes any JSON value and raises JSON::ParserError on anything else. */
function parseJson(answer: Answer): unknown {
  try {
    return JSON.parse(answer.body) as unknown;
  } catch (e) {
    const err = new JsonParseError(
      `unexpected token in ${JSON.stringify(answer.body.slice(0, 80))}: ${(e as Error).message}`,
    );
    err.answer = answer;
    throw err;
  }
}

/**
 * OPI.recursive_ostruct (helpers.rb:48-53): `hash.map { |key, value| ... }.to_h`. A Hash stays one;
 * an Array's elements become keys (an element that is an array gives key and value); anything else has
 * no `map` and raises NoMethodError. Missing fields then read as nil.
 */
function recursiveOstruct(v: unknown): RubyHash {
  if (isHash(v)) return v;
  if (Array.isArray(v)) {
    return Object.fromEntries(
      v.map((e: unknown) => (Array.isArray(e) ? [rubyToS(e[0]), e[1] as unknown] : [rubyToS(e), undefined])),
    );
  }
  throw new RubyError('NoMethodError', `undefined method 'map' for ${rubyToS(v) || 'nil'}`);
}

/** `x.message` / `x.error` on a value read from an OpenStruct: nil and non-structs have no such method. */
function field(v: unknown, name: string): unknown {
  if (isHash(v)) return v[name];
  throw new RubyError(
    'NoMethodError',
    `undefined method '${name}' for ${v === undefined ? 'nil' : rubyToS(v)}`,
  );
}

function withAnswer<T>(answer: Answer, run: () => T): T {
  try {
    return run();
  } catch (e) {
    if (e instanceof CcClientError) e.answer ??= answer;
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------------
// HTTP as HTTPClient 2.8.3 sends it.

/** Session#set_header (httpclient session.rb:720-741): agent name with the library and Ruby versions. */
export const HTTPCLIENT_USER_AGENT = 'HTTPClient/1.0 (2.8.3, ruby 3.2.2 (2023-03-30))';

/**
 * One request. CC passes its JSON as a String body without a Content-Type, so HTTPClient adds
 * `application/x-www-form-urlencoded` (httpclient.rb:1145-1176 at v2.8.3); it always sends Accept
 * and Date, and a Content-Length only with a body (http.rb:387-398,744-755). Node adds `Content-Length: 0`
 * to a bodiless PUT/DELETE where HTTPClient sends none. CC's mTLS is not modelled.
 */
export function send(base: string, req: CcRequest): Promise<Answer> {
  const url = new URL(req.path, base);
  const payload = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body), 'utf8');
  const headers: Record<string, string> = {
    'User-Agent': HTTPCLIENT_USER_AGENT,
    Accept: '*/*',
    Date: new Date().toUTCString(),
    ...(payload && {
      'Content-Type': 'application/x-www-form-urlencoded',
      'Content-Length': String(payload.length),
    }),
  };
  return new Promise((resolve, reject) => {
    const r = httpRequest(url, { method: req.method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end(payload);
  });
}

// ---------------------------------------------------------------------------------------------------
// The four clients.

export interface CcOpiClientOptions {
  /** How the instances client waits between tries (Kernel.sleep); tests may pass a shorter one. */
  sleep?: (ms: number) => Promise<void>;
}

export class CcOpiClient {
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    readonly base: string,
    options: CcOpiClientOptions = {},
  ) {
    this.sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  }

  // --- apps_rest_client.rb ---

  /** desire_app (12-16): returns the response whatever its status; CC never reads it. */
  async desireApp(req: CcRequest): Promise<CcResult<null>> {
    return { answer: await send(this.base, req), outcome: null };
  }

  /** fetch_scheduling_infos (18-24): no status check; `['desired_lrp_scheduling_infos'].map`. */
  async fetchSchedulingInfos(req: CcRequest): Promise<CcResult<RubyHash[]>> {
    const answer = await send(this.base, req);
    return withAnswer(answer, () => {
      const json = parseJson(answer);
      if (!isHash(json)) throw new RubyError('TypeError', 'no implicit conversion of String into Integer');
      const infos = json['desired_lrp_scheduling_infos'];
      if (!Array.isArray(infos)) throw new RubyError('NoMethodError', "undefined method 'map'");
      return { answer, outcome: infos.map((h) => recursiveOstruct(h)) };
    });
  }

  /** update_app (26-35): any status but 200 raises RunnerError with `error.message`. */
  async updateApp(req: CcRequest): Promise<CcResult<null>> {
    const answer = await send(this.base, req);
    return withAnswer(answer, () => {
      if (answer.status !== 200) {
        const json = recursiveOstruct(parseJson(answer));
        throw new CcApiError('RunnerError', field(field(json, 'error'), 'message'));
      }
      return { answer, outcome: null };
    });
  }

  /** get_app (37-47): 404 → nil; any other status is parsed and its `desired_lrp` returned (nil if absent). */
  async getApp(req: CcRequest): Promise<CcResult<unknown>> {
    const answer = await send(this.base, req);
    return withAnswer(answer, () => {
      if (answer.status === 404) return { answer, outcome: null };
      const json = recursiveOstruct(parseJson(answer));
      return { answer, outcome: json['desired_lrp'] ?? null };
    });
  }

  /** stop_app (49-54) and stop_index (56-61): the response, no status check. */
  async stopApp(req: CcRequest): Promise<CcResult<null>> {
    return { answer: await send(this.base, req), outcome: null };
  }

  async stopIndex(req: CcRequest): Promise<CcResult<null>> {
    return { answer: await send(this.base, req), outcome: null };
  }

  // --- instances_client.rb ---

  /**
   * lrp_instances (41-56): 5 tries (13) with Retryable (retryable 3.0.5 lib/retryable.rb:62-97: every
   * StandardError but NotRunningProcessError is retried, sleeping 2**(retries-2) s: 0.25, 0.5, 1, 2).
   */
  async lrpInstances(req: CcRequest, process: CcProcess): Promise<CcResult<ActualLrp[]>> {
    const tries = 5;
    for (let retries = 0; ; retries++) {
      try {
        return await this.lrpInstancesOnce(req, process);
      } catch (e) {
        // Network errors are StandardErrors too: only NotRunningProcessError stops the tries.
        if (e instanceof NotRunningProcessError) throw e;
        if (retries + 1 >= tries) throw e;
        await this.sleep(1000 * 2 ** (retries - 2));
      }
    }
  }

  private async lrpInstancesOnce(req: CcRequest, process: CcProcess): Promise<CcResult<ActualLrp[]>> {
    const answer = await send(this.base, req);
    return withAnswer(answer, () => {
      const json = parseJson(answer);
      // parsed_response['error'] on a non-Hash: Array#[] with a String is a TypeError.
      if (!isHash(json)) throw new RubyError('TypeError', 'no implicit conversion of String into Integer');
      const error = json['error'];
      // process_has_no_desired_instances? (66-68), then raise_non_404_error (92-97).
      if (process.state === 'STOPPED' || process.instances === 0) {
        if (!blank(error) && !includesNotFound(error)) {
          throw new NotRunningProcessError(`expected no instances for stopped process: ${rubyToS(error)}`);
        }
        return { answer, outcome: [] };
      }
      // raise_error (88-90): any truthy `error`, even "".
      if (truthy(error)) throw new InstancesError(rubyToS(error));
      const instances = json['instances'];
      if (!Array.isArray(instances)) throw new RubyError('NoMethodError', "undefined method 'map' for nil");
      const outcome = instances.map((i: unknown): ActualLrp => {
        if (!isHash(i)) throw new RubyError('TypeError', 'no implicit conversion of String into Integer');
        // Ruby keeps `since` (nanoseconds) exact; a JS number may round it, which no check here relies on.
        return {
          index: i['index'],
          process_guid: json['process_guid'],
          state: i['state'],
          since: i['since'],
          placement_error: i['placement_error'],
        };
      });
      return { answer, outcome };
    });
  }

  // --- task_client.rb ---

  /** desire_task (13-22): any status but 202 raises RunnerError with the top-level `message`. */
  async desireTask(req: CcRequest): Promise<CcResult<null>> {
    const answer = await send(this.base, req);
    return withAnswer(answer, () => {
      if (answer.status !== 202) {
        throw new CcApiError('RunnerError', recursiveOstruct(parseJson(answer))['message']);
      }
      return { answer, outcome: null };
    });
  }

  /** fetch_task (24-36): 404 → nil; other non-200 → TaskError; `guid` renamed `task_guid`. */
  async fetchTask(req: CcRequest): Promise<CcResult<RubyHash | null>> {
    const answer = await send(this.base, req);
    return withAnswer(answer, () => {
      if (answer.status === 404) return { answer, outcome: null };
      if (answer.status !== 200) throw new CcApiError('TaskError', `response status code: ${answer.status}`);
      const task = parseJson(answer);
      if (!isHash(task)) throw new RubyError('TypeError', 'no implicit conversion of Symbol into Integer');
      return { answer, outcome: renameGuid(task) };
    });
  }

  /** fetch_tasks (38-51): non-200 → TaskError; each entry's `guid` renamed `task_guid`. */
  async fetchTasks(req: CcRequest): Promise<CcResult<RubyHash[]>> {
    const answer = await send(this.base, req);
    return withAnswer(answer, () => {
      if (answer.status !== 200) throw new CcApiError('TaskError', `response status code: ${answer.status}`);
      const tasks = parseJson(answer);
      if (!Array.isArray(tasks)) throw new RubyError('NoMethodError', "undefined method 'each'");
      return {
        answer,
        outcome: tasks.map((t: unknown) => {
          if (!isHash(t)) throw new RubyError('TypeError', 'no implicit conversion of String into Integer');
          return renameGuid(t);
        }),
      };
    });
  }

  /** cancel_task (53-63): a status above 400 other than 404 raises TaskError with the top-level `message`. */
  async cancelTask(req: CcRequest): Promise<CcResult<null>> {
    const answer = await send(this.base, req);
    return withAnswer(answer, () => {
      if (answer.status > 400 && answer.status !== 404) {
        throw new CcApiError('TaskError', recursiveOstruct(parseJson(answer))['message']);
      }
      return { answer, outcome: null };
    });
  }

  // --- stager_client.rb ---

  /** stage → start_staging (78-86): any status but 202 raises RunnerError with the top-level `message`. */
  async stage(req: CcRequest): Promise<CcResult<null>> {
    const answer = await send(this.base, req);
    return withAnswer(answer, () => {
      if (answer.status !== 202) {
        throw new CcApiError('RunnerError', recursiveOstruct(parseJson(answer))['message']);
      }
      return { answer, outcome: null };
    });
  }
}

/** `error.include?('not found')` (instances_client.rb:94) for the values JSON can hold. */
function includesNotFound(error: unknown): boolean {
  if (typeof error === 'string') return error.includes('not found');
  if (Array.isArray(error)) return error.includes('not found');
  if (isHash(error)) return 'not found' in error;
  throw new RubyError('NoMethodError', `undefined method 'include?' for ${rubyToS(error)}`);
}

/** `task[:task_guid] = task.delete('guid')` (task_client.rb:34,47): the key moves to the end. */
function renameGuid(task: RubyHash): RubyHash {
  const { guid, ...rest } = task;
  return { ...rest, task_guid: guid ?? null };
}

// ---------------------------------------------------------------------------------------------------
// Dispatch by the names a corpus fixture uses.

export type ClientName = 'apps_rest_client' | 'instances_client' | 'task_client' | 'stager_client';

export interface CcCall {
  client: ClientName;
  method: string;
  request: CcRequest;
  /** For instances_client.lrp_instances only. */
  process?: CcProcess;
}

type Method = (cc: CcOpiClient, call: CcCall) => Promise<CcResult<unknown>>;

/** Each public method of CC's four OPI clients, by `<client>.<method>`. */
const METHODS: Record<string, Method> = {
  'apps_rest_client.desire_app': (cc, c) => cc.desireApp(c.request),
  'apps_rest_client.fetch_scheduling_infos': (cc, c) => cc.fetchSchedulingInfos(c.request),
  'apps_rest_client.update_app': (cc, c) => cc.updateApp(c.request),
  'apps_rest_client.get_app': (cc, c) => cc.getApp(c.request),
  'apps_rest_client.stop_app': (cc, c) => cc.stopApp(c.request),
  'apps_rest_client.stop_index': (cc, c) => cc.stopIndex(c.request),
  'instances_client.lrp_instances': (cc, c) => {
    if (!c.process) throw new Error('lrp_instances needs the CC process (state, instances)');
    return cc.lrpInstances(c.request, c.process);
  },
  'task_client.desire_task': (cc, c) => cc.desireTask(c.request),
  'task_client.fetch_task': (cc, c) => cc.fetchTask(c.request),
  'task_client.fetch_tasks': (cc, c) => cc.fetchTasks(c.request),
  'task_client.cancel_task': (cc, c) => cc.cancelTask(c.request),
  'stager_client.stage': (cc, c) => cc.stage(c.request),
};

/** Runs one call through the client method CC would use; throws what that method raises. */
export function callCc(cc: CcOpiClient, call: CcCall): Promise<CcResult<unknown>> {
  const key = `${call.client}.${call.method}`;
  const method = METHODS[key];
  if (!method) throw new Error(`no CC client method ${key}`);
  return method(cc, call);
}
