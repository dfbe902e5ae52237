import { describe, expect, it } from '@jest/globals';
import { DNS_LABEL } from '@opi/domain';
import { sampleLrp } from './lrp.fixture.js';
import { dnsLabelPart, namePrefix, registrySecretName, shortHash, workloadName } from './names.js';

describe('namePrefix', () => {
  it.each<[string, string, string]>([
    ['my-app', 'dev', 'my-app-dev'],
    ['My App', 'Dev Space', 'my-app-dev-space'],
    ['app_1.2', 'space', 'app-1-2-space'],
    ['--app--', '--space--', 'app-space'],
    ['ÄÖÜ app', 'dev', 'app-dev'],
    ['', '', 'app'],
    ['!!!', '???', 'app'],
    ['a'.repeat(50), 'dev', 'a'.repeat(40)],
    // Cut at 40 lands on a '-': it is trimmed, not kept as the last character.
    [`${'a'.repeat(39)} x`, 'dev', 'a'.repeat(39)],
    ['日本語', 'ünïcode', 'n-code'],
  ])('%j + %j → %j', (app, space, expected) => {
    expect(namePrefix(app, space)).toBe(expected);
  });
});

describe('workloadName', () => {
  it('is the prefix plus the first 10 hex characters of sha256(process_guid)', () => {
    // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
    expect(workloadName({ appName: 'app', spaceName: 'dev', processGuid: 'abc' })).toBe('app-dev-ba7816bf8f');
  });

  it('is deterministic and differs between versions of the same process', () => {
    const a = sampleLrp();
    expect(workloadName(a)).toBe(workloadName(sampleLrp()));
    expect(workloadName(a)).not.toBe(workloadName(sampleLrp({ processGuid: `${a.guid}-other` })));
  });

  it.each([
    ['', ''],
    ['x'.repeat(255), 'y'.repeat(255)],
    ['Ünïcødé ☃', 'SPACE'],
  ])('is a DNS-1123 label of at most 51 characters for %j/%j', (appName, spaceName) => {
    const name = workloadName({ appName, spaceName, processGuid: sampleLrp().processGuid });
    expect(name).toMatch(DNS_LABEL);
    expect(name.length).toBeLessThanOrEqual(51);
  });
});

describe('registrySecretName', () => {
  it('is the workload name with -registry', () => {
    const lrp = sampleLrp();
    expect(registrySecretName(lrp)).toBe(`${workloadName(lrp)}-registry`);
    expect(registrySecretName(lrp)).toMatch(DNS_LABEL);
  });
});

describe('dnsLabelPart', () => {
  it.each<[string, number, string]>([
    ['My App', 40, 'my-app'],
    ['ABC_DEF.9', 8, 'abc-def'],
    ['--x--', 8, 'x'],
    ['', 8, ''],
    ['日本語', 8, ''],
    ['abcdefghij', 4, 'abcd'],
  ])('%j, %i → %j', (text, max, expected) => {
    expect(dnsLabelPart(text, max)).toBe(expected);
  });
});

describe('shortHash', () => {
  it('is the first 10 hex characters of sha256', () => {
    expect(shortHash('abc')).toBe('ba7816bf8f');
    expect(shortHash('')).toBe('e3b0c44298');
  });
});
