// Template-variable formatting for raw PromQL, so that a variable's value cannot change the
// meaning of the expression around it. Values are written for a double-quoted PromQL string
// ("$model"); multi-value and "All" variables become an escaped RE2 alternation for =~.

interface VariableLike {
  multi?: boolean;
  includeAll?: boolean;
}

/** Escapes a value for a double-quoted PromQL string literal. */
export function escapePromQLString(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
}

/** Escapes RE2 metacharacters so the value matches itself literally. */
export function escapeRegex(value: string): string {
  return value.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
}

/** A `format` function for TemplateSrv.replace on PromQL expressions. */
export function formatPromQLValue(value: unknown, variable?: VariableLike): string {
  if (Array.isArray(value)) {
    const parts = value.map((v) => escapePromQLString(escapeRegex(String(v))));
    return parts.length === 1 ? parts[0] : `(${parts.join('|')})`;
  }
  const text = value === undefined || value === null ? '' : String(value);
  if (variable?.multi || variable?.includeAll) {
    return escapePromQLString(escapeRegex(text));
  }
  return escapePromQLString(text);
}
