import { formattedValueToString, getValueFormat } from '@grafana/data';

/** A value in its Grafana unit (percentunit, s, reqps, bytes …); an em dash when it does not exist. */
export function formatValue(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return '—';
  }
  return formattedValueToString(getValueFormat(unit || 'short')(value));
}

/** A relative change (now / before − 1) as a signed percentage, or a multiple from tenfold on. */
export function formatChange(change: number | null | undefined): string {
  if (change === null || change === undefined || !Number.isFinite(change)) {
    return '—';
  }
  // Grown tenfold or more: a multiple says it better (0.03 % → 13.5 % is ×449, not +44788 %).
  if (change >= 9) {
    return `×${(change + 1).toFixed(change >= 99 ? 0 : 1)}`;
  }
  const pct = change * 100;
  const digits = Math.abs(pct) >= 100 ? 0 : 1;
  return `${pct >= 0 ? '+' : '−'}${Math.abs(pct).toFixed(digits)} %`;
}

/** A UTC time as people read it: 2026-11-23 04:10:00 UTC. */
export function formatTime(iso: string): string {
  const d = new Date(iso);
  if (isNaN(d.getTime())) {
    return iso;
  }
  return d
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, ' UTC');
}

/** A number of seconds as 1h 30m, 45s, 2d 3h. */
export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) {
    return '—';
  }
  const s = Math.round(seconds);
  if (s < 60) {
    return `${s}s`;
  }
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  const parts: string[] = [];
  if (d) {
    parts.push(`${d}d`);
  }
  if (h) {
    parts.push(`${h}h`);
  }
  if (m && d === 0) {
    parts.push(`${m}m`);
  }
  if (rest && d === 0 && h === 0) {
    parts.push(`${rest}s`);
  }
  return parts.join(' ');
}
