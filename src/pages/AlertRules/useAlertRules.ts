import { useCallback, useEffect, useRef, useState } from 'react';

import { ParamValues, renderRules } from '../../api/alerting';
import {
  fetchRuleStates,
  listContactPoints,
  provisionRules,
  ProvisionResult,
  RuleState,
} from '../../api/alertingGrafana';
import { runBacktest } from '../../api/backtest';
import { errorMessage } from '../../api/resource';
import { useRequest } from '../../hooks/useRequest';
import { BacktestView } from './Backtest';
import { downloadText } from './download';

// One hook per request the Alert rules page makes, so the page only lays them out.

export type Outcome = { kind: 'ok'; result: ProvisionResult } | { kind: 'error'; message: string };

/** Grafana's contact points, asked once there is a data source (a catalog to provision). */
export function useContactPoints(hasDataSource: boolean): string[] {
  const loaded = useRequest(hasDataSource ? { key: 'contact-points', load: listContactPoints } : undefined);
  return loaded?.kind === 'loaded' ? loaded.value : [];
}

/**
 * The provisioned rules' states in Grafana (undefined until asked; empty when the group is not
 * there or cannot be read); refresh asks again, keeping the last answer until the next arrives.
 */
export function useRuleStates(folderUid: string | undefined, group: string | undefined) {
  const [states, setStates] = useState<Record<string, RuleState>>();
  const refresh = useCallback(() => {
    if (!folderUid || !group) {
      return;
    }
    fetchRuleStates(folderUid, group).then(setStates, () => setStates({}));
  }, [folderUid, group]);
  useEffect(refresh, [refresh]);
  return { states, refresh };
}

/**
 * Writes the rule group; extra parameters (leaving observation mode) become the page's own once
 * written. Whatever happens, the states are asked again.
 */
export function useProvision(
  uid: string | undefined,
  overrides: ParamValues,
  setOverrides: (p: ParamValues) => void,
  afterwards: () => void
) {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>();
  const provision = useCallback(
    async (extra: ParamValues = {}) => {
      if (!uid) {
        return;
      }
      const params = { ...overrides, ...extra };
      setBusy(true);
      setOutcome(undefined);
      try {
        const result = await provisionRules(uid, params);
        setOutcome({ kind: 'ok', result });
        if (Object.keys(extra).length > 0) {
          setOverrides(params);
        }
      } catch (err) {
        setOutcome({ kind: 'error', message: errorMessage(err) });
      } finally {
        setBusy(false);
        afterwards();
      }
    },
    [uid, overrides, setOverrides, afterwards]
  );
  return { busy, outcome, setOutcome, provision };
}

/**
 * The last backtest with the parameters it ran with (key): figures for other parameters are
 * marked stale, and an answer to an older run, or one arriving after the page is left, is dropped.
 */
export function useBacktest(uid: string | undefined, overrides: ParamValues, key: string) {
  const [backtest, setBacktest] = useState<{ key: string; view: BacktestView }>();
  const backtestRun = useRef(0);
  const start = useCallback(
    async (window: { from: string; to: string }) => {
      if (!uid) {
        return;
      }
      const run = ++backtestRun.current;
      setBacktest({ key, view: { kind: 'running' } });
      try {
        const answer = await runBacktest(uid, { params: overrides, from: window.from, to: window.to });
        if (run === backtestRun.current) {
          setBacktest({ key, view: { kind: 'loaded', answer, stale: false } });
        }
      } catch (err) {
        if (run === backtestRun.current) {
          setBacktest({ key, view: { kind: 'failed', message: errorMessage(err) } });
        }
      }
    },
    [uid, overrides, key]
  );
  useEffect(
    () => () => {
      backtestRun.current++;
    },
    []
  );
  const view: BacktestView | undefined =
    backtest?.view.kind === 'loaded' ? { ...backtest.view, stale: backtest.key !== key } : backtest?.view;
  return { view, start };
}

/** Renders the catalog's files and hands one to the browser; a failure goes to onError. */
export function useDownload(uid: string | undefined, overrides: ParamValues, onError: (o: Outcome) => void) {
  return useCallback(
    async (file: 'prometheus' | 'alertmanager' | 'grafana-provisioning', name: string) => {
      if (!uid) {
        return;
      }
      try {
        const rendered = await renderRules(uid, overrides);
        downloadText(name, rendered.files?.[file] ?? '');
      } catch (err) {
        onError({ kind: 'error', message: errorMessage(err) });
      }
    },
    [uid, overrides, onError]
  );
}
