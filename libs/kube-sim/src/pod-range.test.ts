import { afterEach, describe, expect, it } from '@jest/globals';
import { eventually } from './controllers/test-harness.js';
import { type Simulator, podServingHint, startSimulator } from './index.js';
import { POD_RANGE_ENV, type PodRangeClaim, claimPodRange, parsePodRange } from './pod-range.js';

/** a.b.c.d as a number, for range checks. */
function ipv4(ip: string): number {
  const parts = ip.split('.').map(Number);
  expect(parts).toHaveLength(4);
  return parts.reduce((n, p) => {
    expect(Number.isInteger(p) && p >= 0 && p <= 255).toBe(true);
    return n * 256 + p;
  }, 0);
}

function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  const start = ipv4(base ?? '');
  return ipv4(ip) >= start && ipv4(ip) < start + size;
}

describe('parsePodRange', () => {
  it('takes a /16 inside 127.0.0.0/8 other than 127.0.0.0/16', () => {
    expect(parsePodRange('127.12.0.0/16')).toBe(12);
    expect(parsePodRange('127.1.0.0/16')).toBe(1);
    expect(parsePodRange('127.255.0.0/16')).toBe(255);
  });

  it.each([
    '127.0.0.0/16',
    '10.244.0.0/16',
    '127.12.0.0/24',
    '127.12.0.0/8',
    '127.12.1.0/16',
    '127.256.0.0/16',
    '127.012.0.0/16',
    '127.12.0.0',
    '',
  ])('refuses %j, naming it', (text) => {
    expect(() => parsePodRange(text)).toThrow(JSON.stringify(text));
  });
});

describe('claimPodRange', () => {
  const claims: PodRangeClaim[] = [];
  afterEach(async () => {
    await Promise.all(claims.splice(0).map((c) => c.release()));
  });

  it('gives claims made at once different ranges, each a /16 of 127.0.0.0/8', async () => {
    const got = await Promise.all(Array.from({ length: 8 }, () => claimPodRange()));
    claims.push(...got);
    expect(new Set(got.map((c) => c.octet)).size).toBe(8);
    for (const c of got) {
      expect(c.octet).toBeGreaterThanOrEqual(2);
      expect(c.octet).toBeLessThanOrEqual(254);
      expect(c.cidr).toBe(`127.${c.octet}.0.0/16`);
      expect(inCidr(c.claimAddress, '127.0.0.0/8')).toBe(true);
      expect(inCidr(c.claimAddress, c.cidr)).toBe(true);
    }
  });

  it('refuses a range another claim holds, and hands it out again once released', async () => {
    const first = await claimPodRange();
    claims.push(first);
    await expect(claimPodRange(first.cidr)).rejects.toThrow(
      `pod range ${first.cidr} is held by another simulator`,
    );
    await first.release();
    const again = await claimPodRange(first.cidr);
    claims.push(again);
    expect(again.octet).toBe(first.octet);
  });
});

describe('a simulator’s pod addresses', () => {
  const sims: Simulator[] = [];
  const saved = process.env[POD_RANGE_ENV];
  afterEach(async () => {
    await Promise.all(sims.splice(0).map((s) => s.close()));
    if (saved === undefined) Reflect.deleteProperty(process.env, POD_RANGE_ENV);
    else process.env[POD_RANGE_ENV] = saved;
  });

  const podIPs = (sim: Simulator): string[] =>
    sim.store
      .all(sim.store.registry.get('', 'pods'), 'default')
      .map((p) => (p['status'] as { podIP?: string } | undefined)?.podIP ?? '');

  it('are all in 127.0.0.0/8, inside the range it claimed, and two simulators started at once get different ranges', async () => {
    Reflect.deleteProperty(process.env, POD_RANGE_ENV);
    const started = await Promise.all([1, 2].map((seed) => startSimulator({ seed })));
    sims.push(...started);
    const [a, b] = started;
    if (!a?.podRange || !b?.podRange) throw new Error('no pod range');
    expect(a.podRange).not.toBe(b.podRange);
    for (const sim of started) {
      const pods = sim.store.registry.get('', 'pods');
      for (let i = 0; i < 12; i++)
        sim.store.create(pods, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `p${i}`, namespace: 'default' },
          spec: { containers: [{ name: 'app', image: 'nginx' }] },
        } as never);
    }
    for (const sim of started) {
      const ips = await eventually(
        () => (podIPs(sim).every((ip) => ip !== '') ? podIPs(sim) : false),
        'every pod has an IP',
      );
      expect(new Set(ips).size).toBe(12);
      for (const ip of ips) {
        expect(inCidr(ip, '127.0.0.0/8')).toBe(true);
        expect(inCidr(ip, sim.podRange ?? '')).toBe(true);
      }
      // Each node's podCIDR is a slice of the range.
      for (const node of sim.store.all(sim.store.registry.get('', 'nodes'))) {
        const cidr = (node['spec'] as { podCIDR: string }).podCIDR;
        expect(cidr.startsWith(`127.${(sim.podRange ?? '').split('.')[1]}.`)).toBe(true);
      }
    }
    const all = [...podIPs(a), ...podIPs(b)];
    expect(new Set(all).size).toBe(all.length);
  });

  it('takes the range of the podRange option, else of KUBESIM_POD_RANGE, and refuses a bad one naming it', async () => {
    const free = await claimPodRange();
    await free.release();
    process.env[POD_RANGE_ENV] = free.cidr;
    const sim = await startSimulator();
    sims.push(sim);
    expect(sim.podRange).toBe(free.cidr);
    // Held now: a second simulator asking for it fails to start.
    await expect(startSimulator({ podRange: free.cidr })).rejects.toThrow(/held by another simulator/);
    process.env[POD_RANGE_ENV] = '10.244.0.0/16';
    await expect(startSimulator()).rejects.toThrow(`${POD_RANGE_ENV}: a pod range is a /16`);
    await expect(startSimulator({ podRange: '127.0.0.0/16' })).rejects.toThrow('"127.0.0.0/16"');
  });

  it('claims no range without controllers (no kubelet hands out addresses)', async () => {
    const sim = await startSimulator({ controllers: false });
    sims.push(sim);
    expect(sim.podRange).toBeUndefined();
    expect(podServingHint(sim)).toBeUndefined();
  });

  it('says in its start output how to reach a pod', () => {
    expect(podServingHint({ podRange: '127.9.0.0/16', servePods: true })).toBe(
      'pods answer HTTP at their IP (range 127.9.0.0/16): curl http://<podIP>:8080/ (IPs: kubectl get pods -o wide)',
    );
    expect(podServingHint({ podRange: '127.9.0.0/16', servePods: false })).toBe(
      'pods get IPs from 127.9.0.0/16; serving is off: nothing answers at them',
    );
  });
});
