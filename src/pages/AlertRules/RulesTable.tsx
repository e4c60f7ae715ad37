import React, { useState } from 'react';
import { Badge, BadgeColor, useStyles2 } from '@grafana/ui';

import { CatalogRule, Severity } from '../../api/alerting';
import { RuleState } from '../../api/alertingGrafana';
import { getTableStyles } from '../../components/Table/tableStyles';
import { BacktestCell, BacktestView, EpisodesTable } from './Backtest';

interface Props {
  rules: CatalogRule[];
  /** Rule uid in Grafana by catalog id (absent for rules the profile cannot feed). */
  uids: Record<string, string>;
  /** States Grafana reports, by rule uid; undefined while unknown. */
  states?: Record<string, RuleState>;
  observation: boolean;
  /** The last backtest; the column shows once one was asked for. */
  backtest?: BacktestView;
}

const severityColor: Record<Severity, BadgeColor> = { P0: 'red', P1: 'orange', P2: 'blue' };
const severityText: Record<Severity, string> = {
  P0: 'P0 · pages (phone + urgent chat)',
  P1: 'P1 · chat',
  P2: 'P2 · recorded, never sent',
};

const stateBadge: Record<RuleState, { text: string; color: BadgeColor }> = {
  firing: { text: 'Firing', color: 'red' },
  pending: { text: 'Pending', color: 'orange' },
  normal: { text: 'Normal', color: 'green' },
  error: { text: 'Error', color: 'red' },
  nodata: { text: 'No data', color: 'blue' },
};

/** The catalog: severity, condition, hold time, the rule's state in Grafana and its backtest. */
export function RulesTable({ rules, uids, states, observation, backtest }: Props) {
  const s = useStyles2(getTableStyles);
  const [expanded, setExpanded] = useState<Record<string, boolean>>({});
  const tested = backtest?.kind === 'loaded' ? backtest.answer.rules : [];
  return (
    <table className={s.table} aria-label="Alert rules">
      <thead>
        <tr>
          <th>Severity</th>
          <th>Rule</th>
          <th>Condition</th>
          <th>For</th>
          <th>State</th>
          {backtest && <th>Backtest</th>}
        </tr>
      </thead>
      <tbody>
        {rules.map((r) => {
          const uid = uids[r.id];
          const state = uid ? states?.[uid] : undefined;
          const result = tested.find((t) => t.id === r.id);
          const open = Boolean(expanded[r.id] && result && result.episodes.length > 0);
          return (
            <React.Fragment key={r.id}>
              <tr aria-label={r.title}>
                <td>
                  <Badge color={severityColor[r.severity]} text={r.severity} tooltip={severityText[r.severity]} />
                </td>
                <td>
                  <div>{r.title}</div>
                  <div className={s.why}>{r.why}</div>
                </td>
                <td>
                  {r.unavailable ? <span className={s.why}>Not available: {r.unavailable}</span> : r.condition}
                  {!r.unavailable && r.notMeasured && (
                    <div className={s.why}>
                      <Badge color="orange" text="Not measured" tooltip={r.notMeasured} /> {r.notMeasured}
                    </div>
                  )}
                </td>
                <td>{r.for === '0s' ? 'at once' : r.for}</td>
                <td>
                  {r.unavailable ? (
                    <Badge color="darkgrey" text="Unavailable" />
                  ) : states === undefined ? (
                    <span className={s.why}>…</span>
                  ) : state ? (
                    <>
                      <Badge color={stateBadge[state].color} text={stateBadge[state].text} />
                      {observation && r.severity !== 'P2' && <span className={s.why}> observation</span>}
                    </>
                  ) : (
                    <span className={s.why}>Not in Grafana</span>
                  )}
                </td>
                {backtest && (
                  <td>
                    <BacktestCell
                      rule={result}
                      view={backtest}
                      expanded={open}
                      onToggle={() => setExpanded((x) => ({ ...x, [r.id]: !x[r.id] }))}
                    />
                  </td>
                )}
              </tr>
              {open && result && (
                <tr aria-label={`${r.title}: episodes`}>
                  <td />
                  <td colSpan={5}>
                    <EpisodesTable rule={result} />
                  </td>
                </tr>
              )}
            </React.Fragment>
          );
        })}
      </tbody>
    </table>
  );
}
