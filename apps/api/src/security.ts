/**
 * Who may reach the API. CC's routes take a bearer token (OPI_API_TOKENS) and/or a client certificate
 * (mutual TLS, enforced in the TLS handshake); probes and metrics take nothing; the dashboard has its
 * own Basic credentials. An API with neither tokens nor mutual TLS listens on loopback only, unless
 * OPI_ALLOW_INSECURE says otherwise: whoever reaches it can run workloads on the cluster.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ServerOptions } from 'node:https';
import { BlockList, isIP } from 'node:net';
import type { RequestHandler } from 'express';
import type { Settings } from '@opi/config';
import { errorBody } from '@opi/contract';
import { sendError } from './errors.js';

/**
 * Constant-time comparison: both sides are hashed first, so neither the content nor the length of the
 * expected value leaks through timing (timingSafeEqual alone needs equal lengths).
 */
export function safeEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** CC's credentials on its routes: `Authorization: Bearer <one of tokens>`, else 401. */
export function requireBearerToken(tokens: readonly string[]): RequestHandler {
  return (req, res, next) => {
    const m = /^Bearer +([^\s]+) *$/i.exec(req.headers.authorization ?? '');
    let ok = false;
    // Every token is compared, matched or not, so the time taken does not say which one matched.
    if (m?.[1]) for (const token of tokens) ok = safeEqual(m[1], token) || ok;
    if (ok) {
      next();
      return;
    }
    res.setHeader('WWW-Authenticate', m ? 'Bearer realm="opi", error="invalid_token"' : 'Bearer realm="opi"');
    sendError(req, res, 401, m ? 'the bearer token is not valid' : 'a bearer token is required');
  };
}

/** HTTP Basic credentials (the dashboard's); a browser asks for them on the 401's WWW-Authenticate. */
export function requireBasicAuth(
  credentials: { username: string; password: string },
  realm: string,
): RequestHandler {
  return (req, res, next) => {
    const m = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(req.headers.authorization ?? '');
    const decoded = m?.[1] ? Buffer.from(m[1], 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    if (colon >= 0) {
      // Both compared whatever the first gives, for the same reason as the tokens.
      const user = safeEqual(decoded.slice(0, colon), credentials.username);
      const pass = safeEqual(decoded.slice(colon + 1), credentials.password);
      if (user && pass) {
        next();
        return;
      }
    }
    res.setHeader('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`);
    res.status(401).json(errorBody('credentials are required'));
  };
}

/**
 * Browsers send Basic credentials with any request to the origin, including ones a foreign page makes
 * them send (CSRF). Writes whose Sec-Fetch-Site says they come from another site are refused; clients
 * that are not browsers send no such header and are not affected.
 */
export const refuseCrossSiteWrites: RequestHandler = (req, res, next) => {
  const site = req.headers['sec-fetch-site'];
  const safe = req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS';
  if (safe || site === undefined || site === 'same-origin' || site === 'none') {
    next();
    return;
  }
  res.status(403).json(errorBody('cross-site requests may not change anything'));
};

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** Whether an address to listen on is reachable from this machine only. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  const family = isIP(h);
  if (family === 0) return false;
  // Also covers 0:0:0:0:0:0:0:1 and ::ffff:127.0.0.1.
  return loopback.check(h, family === 4 ? 'ipv4' : 'ipv6');
}

export class InsecureListenError extends Error {
  override name = 'InsecureListenError';
}

/** True when CC's routes ask for credentials: a token or a client certificate. */
export function apiIsAuthenticated(settings: Settings): boolean {
  return settings.security.apiTokens.length > 0 || settings.security.tls?.clientCaFile !== undefined;
}

/** Throws InsecureListenError when the API would be open to the network. */
export function assertSafeToListen(settings: Settings): void {
  const host = settings.http.host;
  if (apiIsAuthenticated(settings) || settings.security.allowInsecure || isLoopback(host)) return;
  throw new InsecureListenError(
    `refusing to listen on ${host} without authentication: anyone who reaches the API could run ` +
      'workloads on the cluster. Set OPI_API_TOKENS and/or mutual TLS (OPI_TLS_CERT_FILE, ' +
      'OPI_TLS_KEY_FILE, OPI_TLS_CLIENT_CA_FILE), or listen on loopback (HOST=127.0.0.1), or set ' +
      'OPI_ALLOW_INSECURE=true if something in front of the API authenticates.',
  );
}

/** For the mains: the refusal as one fatal log line and exit code 1, rather than a stack trace. */
export function assertSafeToListenOrExit(settings: Settings, logger: { fatal(msg: string): void }): void {
  try {
    assertSafeToListen(settings);
  } catch (e) {
    if (!(e instanceof InsecureListenError)) throw e;
    logger.fatal(e.message);
    process.exit(1);
  }
}

function readSetting(variable: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new Error(`cannot read ${variable} (${file}): ${(e as Error).message}`);
  }
}

/**
 * The https server's options. With a client CA, a client certificate signed by it is required in
 * the handshake: a client without one, or with one from another CA, never reaches a route.
 */
export function tlsServerOptions(tls: NonNullable<Settings['security']['tls']>): ServerOptions {
  return {
    cert: readSetting('OPI_TLS_CERT_FILE', tls.certFile),
    key: readSetting('OPI_TLS_KEY_FILE', tls.keyFile),
    minVersion: 'TLSv1.2',
    ...(tls.clientCaFile
      ? {
          ca: readSetting('OPI_TLS_CLIENT_CA_FILE', tls.clientCaFile),
          requestCert: true,
          rejectUnauthorized: true,
        }
      : {}),
  };
}
