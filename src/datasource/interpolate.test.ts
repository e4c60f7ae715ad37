import { escapePromQLString, escapeRegex, formatPromQLValue } from './interpolate';

describe('PromQL interpolation', () => {
  test('a single value is escaped for a double-quoted string only', () => {
    expect(formatPromQLValue('resnet50')).toBe('resnet50');
    expect(formatPromQLValue('a"b')).toBe('a\\"b');
    expect(formatPromQLValue('a\\b')).toBe('a\\\\b');
    expect(formatPromQLValue('v1.2')).toBe('v1.2');
  });

  test('multi-value and All variables become an escaped alternation', () => {
    expect(formatPromQLValue(['v1.2', 'v2'], { multi: true })).toBe('(v1\\\\.2|v2)');
    expect(formatPromQLValue(['only.one'], { multi: true })).toBe('only\\\\.one');
    expect(formatPromQLValue('x+y', { includeAll: true })).toBe('x\\\\+y');
  });

  test('a value cannot close the string and inject a matcher', () => {
    const injected = formatPromQLValue('x", job="evil');
    const selector = `up{model_name="${injected}"}`;
    // Exactly one unescaped quote pair remains: the one written around the variable.
    expect(selector.match(/(?<!\\)"/g)).toHaveLength(2);
  });

  test('regex escaping covers every RE2 metacharacter', () => {
    expect(escapeRegex('^$.*+?()[]{}|\\')).toBe('\\^\\$\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\');
    expect(escapePromQLString('"\\')).toBe('\\"\\\\');
  });
});
