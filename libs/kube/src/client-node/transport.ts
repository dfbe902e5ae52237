/**
 * The HTTP library under the adapter's client-node API clients: every request bounded by a time-out that
 * covers the body too, connections kept alive and reused, and answers kept as the bytes the server sent.
 *
 * - client-node 1.x has no request time-out of its own, and an http.Agent `timeout` only emits an event
 *   that node-fetch ignores; so each request gets an AbortController, and the body is read inside that
 *   window (a server that stalls mid-body times out too).
 * - client-node 1.4 builds a new https.Agent for every request (KubeConfig.applySecurityAuthentication),
 *   so every call would pay a TCP and TLS handshake. It is swapped for one keep-alive agent per distinct
 *   set of TLS options (a rotated client certificate gets a new agent).
 * - client-node is not given a 2xx body to model (see wireBody): the adapter reads the wire JSON.
 * The choices and their cost: docs/decisions/0006-client-node-transport.md.
 */
import { createHash } from 'node:crypto';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import {
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  ResponseContext,
  ServerConfiguration,
  createConfiguration,
  wrapHttpLibrary,
  type Configuration,
  type HttpLibrary,
} from '@kubernetes/client-node';
import { KubeApiError, requestTimeoutError } from '../port/errors.js';

/** What the generated `…WithHttpInfo` calls resolve to; the body is our buffered copy. */
export interface Answer {
  httpStatusCode: number;
  body: { text(): Promise<string> };
}

/** A request refused before it is sent, for a bad argument. */
export function invalidArgument(message: string, operation: string): KubeApiError {
  return new KubeApiError({ status: undefined, reason: 'ClientError', message, transient: false, operation });
}

/** Where the adapter finds an answer's bytes as the server sent them. */
const WIRE = Symbol('wire bytes');

interface WireBody {
  text(): Promise<string>;
  binary(): Promise<Buffer>;
  [WIRE]: Buffer;
}

/**
 * A response body for client-node. Of a 2xx, client-node would parse the JSON again and build typed
 * models that the adapter never reads (it reads the wire JSON); for a 500-pod list page that was as much
 * CPU and garbage as the adapter's own parse. So it is handed `{}` to build its model from, and the bytes
 * stay under WIRE. An error's body stays whole: client-node puts it in its ApiException.
 */
function wireBody(data: Buffer, status: number): WireBody {
  const ok = status >= 200 && status < 300;
  return {
    text: () => Promise.resolve(ok ? '{}' : data.toString('utf8')),
    binary: () => Promise.resolve(ok ? Buffer.from('{}') : data),
    [WIRE]: data,
  };
}

/** The answer's JSON as the server sent it. */
export async function wireJson(answer: Answer): Promise<unknown> {
  const bytes = (answer.body as Partial<WireBody>)[WIRE];
  return JSON.parse(bytes ? bytes.toString('utf8') : await answer.body.text()) as unknown;
}

/** The TLS options of an agent client-node built, as a key: agents with equal keys are interchangeable. */
function agentKey(agent: HttpAgent | HttpsAgent): string {
  const o = (agent as { options?: Record<string, unknown> }).options ?? {};
  const h = createHash('sha256');
  h.update(agent instanceof HttpsAgent ? 'https' : 'http');
  for (const k of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername']) {
    const v = o[k];
    h.update(`|${k}=`);
    if (typeof v === 'string' || Buffer.isBuffer(v)) h.update(v);
    else if (v !== undefined) h.update(JSON.stringify(v) ?? '');
  }
  return h.digest('hex');
}

export interface AgentReuser {
  reuse(agent: HttpAgent | HttpsAgent): HttpAgent | HttpsAgent;
  /** Closes the kept-alive connections. */
  destroy(): void;
}

/** One keep-alive agent per distinct TLS options, in place of client-node's agent per request. */
export function agentReuser(): AgentReuser {
  const agents = new Map<string, HttpAgent | HttpsAgent>();
  const destroy = (): void => {
    for (const a of agents.values()) a.destroy();
    agents.clear();
  };
  const reuse = (agent: HttpAgent | HttpsAgent): HttpAgent | HttpsAgent => {
    // A proxy agent (socks, http(s) proxy) is not ours to replace.
    if (agent.constructor !== HttpsAgent && agent.constructor !== HttpAgent) return agent;
    const key = agentKey(agent);
    let shared = agents.get(key);
    if (!shared) {
      const options = { ...(agent as { options?: object }).options, keepAlive: true };
      shared = agent instanceof HttpsAgent ? new HttpsAgent(options) : new HttpAgent(options);
      // Credentials rotate rarely; a few stale agents are dropped rather than kept forever.
      if (agents.size >= 8) destroy();
      agents.set(key, shared);
    }
    agent.destroy();
    return shared;
  };
  return { reuse, destroy };
}

/** fetch with an AbortController per request and reused connections. */
function boundedHttpLibrary(timeoutMs: number, agents: AgentReuser): HttpLibrary {
  const fetchLibrary = new IsomorphicFetchHttpLibrary();
  return wrapHttpLibrary({
    async send(request) {
      const agent = request.getAgent();
      if (agent) request.setAgent(agents.reuse(agent));
      const controller = new AbortController();
      const timer = setTimeout(() => {
        controller.abort();
      }, timeoutMs);
      request.setSignal(controller.signal);
      try {
        const response = await fetchLibrary.send(request).toPromise();
        const data = await response.body.binary();
        return new ResponseContext(
          response.httpStatusCode,
          response.headers,
          wireBody(data, response.httpStatusCode),
        );
      } catch (e) {
        if (controller.signal.aborted) throw requestTimeoutError(timeoutMs);
        throw e;
      } finally {
        clearTimeout(timer);
      }
    },
  });
}

/** What kc.makeApiClient builds, with the bounded HTTP library in place of client-node's. */
export function boundedConfiguration(
  kc: KubeConfig,
  server: string,
  timeoutMs: number,
  agents: AgentReuser,
): Configuration {
  return createConfiguration({
    baseServer: new ServerConfiguration(server, {}),
    authMethods: { default: kc },
    httpApi: boundedHttpLibrary(timeoutMs, agents),
  });
}
