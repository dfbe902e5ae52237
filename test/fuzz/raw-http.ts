/**
 * A bare HTTP/1.1 client over a socket, so the fuzz tests can send what fetch and supertest would
 * refuse or normalise: raw request targets (`..`, `%2F`, NUL, non-ASCII bytes), odd header values and
 * bodies whose bytes are not what their Content-Type claims.
 */
import { connect } from 'node:net';

export interface RawRequest {
  method: string;
  /** The request target, sent byte for byte (UTF-8). */
  path: string;
  headers: [string, string][];
  body?: Buffer;
}

export interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: string;
}

function parse(data: Buffer): RawAnswer | undefined {
  let rest = data;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const head = rest.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')?.[1]);
    if (!Number.isInteger(status)) return undefined;
    const headers = new Map<string, string>();
    for (const line of head.slice(1)) {
      const i = line.indexOf(':');
      if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
    }
    let body = rest.subarray(end + 4);
    // 100 Continue and other interim answers come before the real one.
    if (status >= 100 && status < 200) {
      rest = body;
      continue;
    }
    if (headers.get('transfer-encoding')?.toLowerCase() === 'chunked') {
      const parts: Buffer[] = [];
      let at = 0;
      for (;;) {
        const eol = body.indexOf('\r\n', at);
        if (eol < 0) break;
        const size = parseInt(body.subarray(at, eol).toString('latin1'), 16);
        if (!(size > 0)) break;
        parts.push(body.subarray(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
      }
      body = Buffer.concat(parts);
    } else if (headers.has('content-length')) {
      body = body.subarray(0, Number(headers.get('content-length')));
    }
    return { status, headers, body: body.toString('utf8') };
  }
}

/** Sends one request on its own connection (Connection: close) and reads the whole answer. */
export function send(port: number, req: RawRequest, timeoutMs = 5_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (err?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const answer = parse(Buffer.concat(chunks));
      if (answer) resolve(answer);
      else reject(err ?? new Error(`no HTTP answer (${chunks.length} chunks received)`));
    };
    const timer = setTimeout(() => {
      finish(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('end', () => {
      finish();
    });
    socket.on('close', () => {
      finish();
    });
    // A server may answer (e.g. 413) and close before it has read the whole body: that is an answer.
    socket.on('error', (err) => {
      finish(err);
    });
    const lines = [`${req.method} ${req.path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
    // A Transfer-Encoding without a body would leave the server waiting for one, rightly: send an empty
    // chunked body then. With a body, it comes with Content-Length too, which the server refuses.
    const chunked = !req.body && req.headers.some(([k]) => k.toLowerCase() === 'transfer-encoding');
    for (const [k, v] of req.headers) {
      lines.push(`${k}: ${chunked && k.toLowerCase() === 'transfer-encoding' ? 'chunked' : v}`);
    }
    if (req.body) lines.push(`Content-Length: ${req.body.length}`);
    socket.write(Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'));
    if (chunked) socket.write('0\r\n\r\n');
    if (req.body?.length) socket.write(req.body);
  });
}
