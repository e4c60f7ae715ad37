// Accepts what both Go's time.ParseDuration and Prometheus' model.ParseDuration accept for a
// warm-up window: one or more <number><unit> pairs with units ms, s, m, h (e.g. "2m", "1m30s",
// "90s", "1.5m"). Days and weeks are left out on purpose: Go does not parse them, and a warm-up
// window that long is a mistake.
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a duration string, or undefined when it is not a valid positive duration. */
export function parseDurationMs(text: string): number | undefined {
  const value = text.trim();
  if (!DURATION.test(value)) {
    return undefined;
  }
  let total = 0;
  for (const m of value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    total += parseFloat(m[1]) * UNIT_MS[m[2]];
  }
  return total > 0 ? total : undefined;
}

/** An error message for the warm-up window field, or undefined when it is fine (empty = default). */
export function validateWarmupWindow(text: string | undefined): string | undefined {
  if (text === undefined || text.trim() === '') {
    return undefined;
  }
  const ms = parseDurationMs(text);
  if (ms === undefined) {
    return 'Use a duration such as 2m, 90s or 1m30s (units ms, s, m, h).';
  }
  if (ms > 3_600_000) {
    return 'A warm-up window longer than 1h would hide real incidents; the brief suggests 1–2 minutes.';
  }
  return undefined;
}
