import { parseDurationMs, validateWarmupWindow } from './duration';

describe('warm-up window duration', () => {
  test.each([
    ['2m', 120_000],
    ['90s', 90_000],
    ['1m30s', 90_000],
    ['1.5m', 90_000],
    ['500ms', 500],
    ['1h', 3_600_000],
    [' 2m ', 120_000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDurationMs(text)).toBe(ms);
  });

  test.each(['', '2', 'm', '2 m', '2 minutes', '-2m', '2d', '0s', '1m-30s', 'abc'])('"%s" is rejected', (text) => {
    expect(parseDurationMs(text)).toBeUndefined();
  });

  test('empty means the default and is valid', () => {
    expect(validateWarmupWindow(undefined)).toBeUndefined();
    expect(validateWarmupWindow('')).toBeUndefined();
  });

  test('invalid and overlong windows get a message', () => {
    expect(validateWarmupWindow('2 minutes')).toMatch(/use a duration/i);
    expect(validateWarmupWindow('2h')).toMatch(/longer than 1h/);
    expect(validateWarmupWindow('2m')).toBeUndefined();
  });
});
