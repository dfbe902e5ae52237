import { describe, expect, it } from '@jest/globals';
import { stagingErrorIdOf, usefulLine } from './staging-failure.js';

describe('usefulLine', () => {
  it.each<[string, string | undefined, string]>([
    ['nothing', undefined, ''],
    ['blank lines only', '\n  \n', ''],
    ['one line', 'no buildpack detected', 'no buildpack detected'],
    ['no error word: the last line', 'one\ntwo\nthree\n', 'three'],
    [
      'the last line that calls itself an error, over later failure lines',
      'ERROR: first\nsome output\nerror: second\n!  Failed to install gems\nexit status 14',
      'error: second',
    ],
    ['a failure line when no error line', 'compiling\nnpm install failed\ndone', 'npm install failed'],
    [
      'colour codes and runs of spaces go',
      '\u001b[31;1m**ERROR**\u001b[0m   Unable to\tinstall',
      '**ERROR** Unable to install',
    ],
  ])('%s', (_what, text, expected) => {
    expect(usefulLine(text)).toBe(expected);
  });
});

describe('stagingErrorIdOf', () => {
  it.each<[number, string]>([
    [222, 'NoAppDetectedError'],
    [223, 'BuildpackCompileFailed'],
    [224, 'BuildpackReleaseFailed'],
    [1, 'StagingError'],
    [137, 'StagingError'],
  ])('%s → %s', (code, id) => {
    expect(stagingErrorIdOf(code)).toBe(id);
  });
});
