import { backtestWindow } from './Backtest';

// Half a second past a whole second: the resource reads whole seconds.
const now = new Date('2026-11-23T04:10:00.500Z');

describe('backtest window', () => {
  test.each([
    ['1d', '2026-11-22T04:10:00Z'],
    ['7d', '2026-11-16T04:10:00Z'],
  ] as const)('the last %s ends now', (span, from) => {
    expect(backtestWindow(span, { from: '', to: '' }, now)).toEqual({ from, to: '2026-11-23T04:10:00Z' });
  });

  test('a typed relative range is read against one now', () => {
    expect(backtestWindow('range', { from: 'now-1d', to: 'now' }, now)).toEqual({
      from: '2026-11-22T04:10:00Z',
      to: '2026-11-23T04:10:00Z',
    });
  });

  test.each([
    [{ from: 'last week', to: 'now' }, 'from: not a time; use RFC 3339, milliseconds since the epoch or now-7d'],
    [{ from: 'now', to: 'soon' }, 'to: not a time; use RFC 3339, milliseconds since the epoch or now-7d'],
    [{ from: 'now', to: 'now-1h' }, 'to: must be after from'],
  ])('%p is refused', (range, error) => {
    expect(backtestWindow('range', range, now)).toEqual({ error });
  });
});
