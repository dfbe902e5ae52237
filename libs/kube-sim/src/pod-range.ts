/**
 * Each simulator hands out pod IPs from a loopback /16 of its own, `127.R.0.0/16`, so the pods' ports are
 * real endpoints on this machine. The range is claimed through the kernel: the simulator holds a listening
 * TCP socket on `127.R.255.254:POD_RANGE_CLAIM_PORT` for its lifetime, and a second simulator that tries
 * the same R gets EADDRINUSE. Two simulators on one machine (a developer's `npm start` beside a test
 * run, parallel jest workers) never hand out the same address.
 */
import { randomInt } from 'node:crypto';
import net from 'node:net';

/** The environment variable that sets the range (`127.R.0.0/16`) when startSimulator is not told one. */
export const POD_RANGE_ENV = 'KUBESIM_POD_RANGE';
/** The port of the claim socket: above Linux's ephemeral range (32768–60999), so no client takes it. */
export const POD_RANGE_CLAIM_PORT = 64_127;
/** Ranges picked when none is set: 127.2 … 127.254 (127.0 holds 127.0.0.1, 127.1 is left to people). */
const AUTO_FIRST = 2;
const AUTO_LAST = 254;

export interface PodRange {
  /** R of 127.R.0.0/16. */
  readonly octet: number;
  /** `127.R.0.0/16`. */
  readonly cidr: string;
  /** `127.R.255.254`, where the claim socket listens; never a pod's address. */
  readonly claimAddress: string;
}

export interface PodRangeClaim extends PodRange {
  /** Closes the claim socket: the range is free for the next simulator. */
  release(): Promise<void>;
}

export function podRangeOf(octet: number): PodRange {
  return { octet, cidr: `127.${octet}.0.0/16`, claimAddress: `127.${octet}.255.254` };
}

/** `127.R.0.0/16` → R (1..255); anything else (another /8, another prefix, 127.0.0.0/16) is refused. */
export function parsePodRange(text: string): number {
  const m = /^127\.([1-9]\d{0,2})\.0\.0\/16$/.exec(text.trim());
  const octet = m?.[1] !== undefined ? Number(m[1]) : NaN;
  if (!(octet >= 1 && octet <= 255))
    throw new Error(
      `a pod range is a /16 inside 127.0.0.0/8 other than 127.0.0.0/16, written 127.R.0.0/16 with R 1..255 (e.g. 127.12.0.0/16), got ${JSON.stringify(text)}`,
    );
  return octet;
}

/** Listens on the range's claim address; resolves false when another simulator holds it. */
function listenClaim(range: PodRange): Promise<net.Server | false> {
  return new Promise((resolve, reject) => {
    // Nothing is served on the claim socket: a connection that reaches it is closed at once.
    const server = net.createServer((socket) => socket.destroy());
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') resolve(false);
      else
        reject(
          new Error(
            `cannot claim pod range ${range.cidr}: listening on ${range.claimAddress}:${POD_RANGE_CLAIM_PORT} failed (${err.message}); the simulator needs all of 127.0.0.0/8 on the loopback interface, as Linux has it`,
            { cause: err },
          ),
        );
    });
    server.listen({ host: range.claimAddress, port: POD_RANGE_CLAIM_PORT, exclusive: true }, () => {
      // The claim must not keep a process alive on its own (a forgotten simulator in a test).
      server.unref();
      resolve(server);
    });
  });
}

function claimOf(range: PodRange, server: net.Server): PodRangeClaim {
  let released: Promise<void> | undefined;
  return {
    ...range,
    release: () =>
      (released ??= new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      })),
  };
}

/**
 * Claims a pod range: the one asked for (`127.R.0.0/16`, or R), which fails when another simulator holds
 * it, or else the first free one from a random start among 127.2 … 127.254.
 */
export async function claimPodRange(wanted?: string | number): Promise<PodRangeClaim> {
  if (wanted !== undefined) {
    const octet = typeof wanted === 'number' ? parsePodRange(`127.${wanted}.0.0/16`) : parsePodRange(wanted);
    const range = podRangeOf(octet);
    const server = await listenClaim(range);
    if (!server)
      throw new Error(
        `pod range ${range.cidr} is held by another simulator (${range.claimAddress}:${POD_RANGE_CLAIM_PORT} is in use); choose another or leave it unset to get a free one`,
      );
    return claimOf(range, server);
  }
  const count = AUTO_LAST - AUTO_FIRST + 1;
  const start = randomInt(count);
  for (let i = 0; i < count; i++) {
    const range = podRangeOf(AUTO_FIRST + ((start + i) % count));
    const server = await listenClaim(range);
    if (server) return claimOf(range, server);
  }
  throw new Error(
    `no free pod range: 127.${AUTO_FIRST}.0.0/16 … 127.${AUTO_LAST}.0.0/16 are all held (port ${POD_RANGE_CLAIM_PORT} in use on each 127.R.255.254, by other simulators or by a listener on 0.0.0.0:${POD_RANGE_CLAIM_PORT})`,
  );
}
