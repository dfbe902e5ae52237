/**
 * The transport of a watch: one GET whose answer is newline-delimited JSON, read line by line as it
 * arrives. Built on node:http(s) rather than client-node's `Watch`, which in 1.4 drops lines that fail
 * to parse, loses the Status body of a refused request and has no working time-out. The caller (the
 * adapter) supplies the URL, the authentication headers and the agent from the kubeconfig; this module
 * does not import client-node.
 */
import {
  type Agent as HttpAgent,
  type ClientRequest,
  type IncomingMessage,
  request as httpRequest,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type CallContext, KubeApiError, classify } from '../port/errors.js';
import type { WatchHandle } from '../port/port.js';

/** Where and how to send the watch request; prepared afresh per watch (credentials may rotate). */
export interface WatchTarget {
  url: URL;
  headers: Record<string, string>;
  agent?: HttpAgent | undefined;
}

export interface WatchStreamOptions {
  /** Resolves the request to send; rejects if the credentials cannot be had (e.g. an exec plugin failed). */
  prepare: () => Promise<WatchTarget>;
  /** The stream is aborted after this long, whatever the server does. */
  deadlineMs: number;
  /** For the errors' `operation`. */
  context: CallContext;
  /** Called once per line, synchronously and in order, with the parsed JSON. */
  onEvent: (event: unknown) => void;
  /** Called once when the stream ended or failed: the HTTP status (or 'error' without an answer). */
  onEnd?: (status: number | 'error', durationMs: number) => void;
}

/** A line longer than this is not an object the API server would send; the stream is given up. */
const MAX_LINE_CHARS = 64 * 1024 * 1024;
/** How much of a refused request's body is kept for its error (a Status is small). */
const MAX_ERROR_BODY_CHARS = 64 * 1024;

/** An error as a network failure with `code`, for `classify` to name (ConnectionReset, Timeout, …). */
function networkError(message: string, code: string, name = 'Error'): Error {
  return Object.assign(new Error(message), { code, name });
}

/** Opens the stream at once; the handle's `done` settles exactly once (see WatchHandle). */
export function openWatchStream(options: WatchStreamOptions): WatchHandle {
  const { context, deadlineMs, onEvent } = options;
  const started = performance.now();
  let status: number | 'error' = 'error';
  let settled = false;
  let ended = false;
  let req: ClientRequest | undefined;
  let resolveDone!: () => void;
  let rejectDone!: (e: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });

  // A broken stream: the caller starts over (relist or rewatch), so it is transient.
  const invalidResponse = (message: string): KubeApiError =>
    new KubeApiError({
      status: undefined,
      reason: 'InvalidResponse',
      message,
      transient: true,
      operation: `${context.verb} ${context.resource}${context.namespace ? ` ${context.namespace}` : ''}`,
    });

  const finish = (err?: unknown): void => {
    if (settled) return;
    settled = true;
    clearTimeout(deadline);
    // A stream that ended normally leaves its socket to the agent; anything else drops the connection.
    if (req && !ended) req.destroy();
    try {
      options.onEnd?.(status, performance.now() - started);
    } catch {
      // Reporting must never change how a watch ends.
    }
    if (err === undefined) resolveDone();
    else rejectDone(err);
  };

  const deadline = setTimeout(() => {
    finish(
      classify(
        networkError(`watch cut by the client after ${deadlineMs} ms`, 'ETIMEDOUT', 'TimeoutError'),
        context,
      ),
    );
  }, deadlineMs);
  // The open socket keeps the process alive while the stream runs; the timer alone should not.
  deadline.unref();

  /** Handles one complete line; false once the stream is over (an error, or stop() from onEvent). */
  const line = (text: string): boolean => {
    if (text.trim() === '') return !settled;
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch {
      finish(invalidResponse('the watch stream sent a line that is not JSON'));
      return false;
    }
    try {
      onEvent(event);
    } catch (e) {
      finish(e);
      return false;
    }
    return !settled;
  };

  const refused = (res: IncomingMessage, code: number): void => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      if (text.length < MAX_ERROR_BODY_CHARS) text += chunk.slice(0, MAX_ERROR_BODY_CHARS - text.length);
    });
    const fail = (): void => {
      finish(classify({ code, body: text, headers: res.headers }, context));
    };
    res.on('end', fail);
    res.on('error', fail);
    res.on('close', fail);
  };

  const stream = (res: IncomingMessage): void => {
    let partial = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      if (settled) return;
      let from = 0;
      for (let nl = chunk.indexOf('\n'); nl >= 0; nl = chunk.indexOf('\n', from)) {
        const text = partial === '' ? chunk.slice(from, nl) : partial + chunk.slice(from, nl);
        partial = '';
        from = nl + 1;
        if (!line(text)) return;
      }
      partial += chunk.slice(from);
      if (partial.length > MAX_LINE_CHARS) {
        finish(invalidResponse(`a watch event longer than ${MAX_LINE_CHARS} characters`));
      }
    });
    res.on('end', () => {
      ended = true;
      if (partial !== '' && !line(partial)) return;
      finish();
    });
    res.on('error', (e) => {
      finish(classify(e, context));
    });
    res.on('close', () => {
      if (!ended) finish(classify(networkError('watch connection closed mid-stream', 'ECONNRESET'), context));
    });
  };

  const send = (target: WatchTarget): void => {
    if (settled) return;
    const request = target.url.protocol === 'https:' ? httpsRequest : httpRequest;
    req = request(target.url, {
      method: 'GET',
      headers: { ...target.headers, Accept: 'application/json' },
      ...(target.agent ? { agent: target.agent } : {}),
    });
    req.on('socket', (socket) => {
      // TCP keep-alive probes notice a dead peer on an otherwise silent stream.
      socket.setKeepAlive(true, 30_000);
    });
    req.on('response', (res) => {
      status = res.statusCode ?? 'error';
      if (res.statusCode === 200) stream(res);
      else refused(res, res.statusCode ?? 0);
    });
    req.on('error', (e) => {
      finish(classify(e, context));
    });
    req.end();
  };

  options.prepare().then(send, (e: unknown) => {
    finish(classify(e, context));
  });

  return {
    done,
    stop: () => {
      finish();
    },
  };
}
