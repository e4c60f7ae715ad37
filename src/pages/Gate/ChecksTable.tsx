import React from 'react';
import { Badge, BadgeColor, useStyles2 } from '@grafana/ui';

import { GateCheck } from '../../api/gate';
import { getTableStyles } from '../../components/Table/tableStyles';
import { formatChange, formatValue } from '../Triage/format';

/** Grafana units of the gate's check units. */
const grafanaUnit: Record<string, string> = { s: 's', bytes: 'bytes', requests: 'short', ratio: 'none' };

export function formatCheckValue(value: number | null, unit: string): string {
  return formatValue(value, grafanaUnit[unit] ?? unit);
}

/** The check's limit: a minimum for the traffic guard, a largest allowed change otherwise. */
export function formatLimit(check: GateCheck): string {
  if (check.threshold === null) {
    return '—';
  }
  if (check.name === 'traffic') {
    return `≥ ${check.threshold}`;
  }
  return `+${Number((check.threshold * 100).toFixed(1))} %`;
}

export function checkResult(check: GateCheck): { text: string; color: BadgeColor } {
  if (check.insufficient) {
    return { text: 'insufficient data', color: 'orange' };
  }
  if (check.passed === true) {
    return { text: 'ok', color: 'green' };
  }
  if (check.passed === false) {
    return { text: 'FAIL', color: 'red' };
  }
  return check.reason.startsWith('skipped') ? { text: 'skipped', color: 'darkgrey' } : { text: 'info', color: 'blue' };
}

/** The gate's comparisons, one row each. */
export function ChecksTable({ checks }: { checks: GateCheck[] }) {
  const s = useStyles2(getTableStyles);
  return (
    <table className={s.table} aria-label="Gate checks">
      <thead>
        <tr>
          <th>Check</th>
          <th>Baseline</th>
          <th>Canary</th>
          <th>Change</th>
          <th>Limit</th>
          <th>Result</th>
          <th>Why</th>
        </tr>
      </thead>
      <tbody>
        {checks.map((c) => {
          const result = checkResult(c);
          return (
            <tr key={c.name} aria-label={c.name}>
              <td>{c.name}</td>
              <td>{formatCheckValue(c.baseline, c.unit)}</td>
              <td>{formatCheckValue(c.canary, c.unit)}</td>
              <td>{formatChange(c.change)}</td>
              <td>{formatLimit(c)}</td>
              <td>
                <Badge color={result.color} text={result.text} />
              </td>
              <td className={s.why}>{c.reason}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
