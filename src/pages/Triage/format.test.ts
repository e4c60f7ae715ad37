import { formatChange, formatSeconds, formatTime, formatValue } from './format';

describe('formatting', () => {
  test.each([
    [0.85, 'percentunit', '85%'],
    [0.0612, 's', '61.2 ms'],
    [60, 'reqps', '60 req/s'],
    [null, 's', '—'],
    [NaN, 'percentunit', '—'],
  ])('formatValue(%p, %s) = %s', (v, unit, want) => {
    expect(formatValue(v, unit)).toBe(want);
  });

  test.each([
    [3.25, '+325 %'],
    [8.99, '+899 %'],
    [9, '×10.0'],
    [11.5, '×12.5'],
    [447.882, '×449'],
    [-1, '−100 %'],
    [0.15, '+15.0 %'],
    [-0.0232, '−2.3 %'],
    [null, '—'],
  ])('formatChange(%p) = %s', (v, want) => {
    expect(formatChange(v)).toBe(want);
  });

  test.each([
    [45, '45s'],
    [900, '15m'],
    [1830, '30m 30s'],
    [5400, '1h 30m'],
    [13920, '3h 52m'],
    [183600, '2d 3h'],
  ])('formatSeconds(%d) = %s', (v, want) => {
    expect(formatSeconds(v)).toBe(want);
  });

  test('times read in UTC', () => {
    expect(formatTime('2026-11-23T04:10:00Z')).toBe('2026-11-23 04:10:00 UTC');
  });
});
