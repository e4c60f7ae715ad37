import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';

import { SetupStatus } from '../../api/setup';
import { CheckItem } from './CheckItem';
import { NO_PROBES_HINT, probeHint, profileHint, prometheusHint } from './hints';

interface Props {
  setup: SetupStatus;
}

export function SetupChecklist({ setup }: Props) {
  const s = useStyles2(getStyles);
  const { prometheus, profile, probes, checks } = setup;

  return (
    <ul className={s.list} aria-label="Set-up checks">
      <CheckItem title="Prometheus" state={prometheus.ok ? 'ok' : 'failing'} hint={prometheusHint(prometheus)}>
        <div>{prometheus.url || 'No URL configured'}</div>
        {prometheus.ok && <div>Version {prometheus.version || 'unknown'}</div>}
        {!prometheus.ok && prometheus.error && <div>Error: {prometheus.error}</div>}
      </CheckItem>

      <CheckItem
        title="Metric profile"
        state={profile.name && !profile.warning ? 'ok' : 'warning'}
        hint={profile.warning ?? profileHint(profile)}
      >
        {profile.name ? (
          <div>
            {profile.name} ({profile.detected ? 'detected from the metric names' : 'set in the data source settings'})
          </div>
        ) : (
          <div>No profile recognised</div>
        )}
        {profile.servers.length > 1 && (
          <div>
            Servers found:{' '}
            {profile.servers
              .map((sv) => `${sv.title || sv.profile} (${sv.models} model${sv.models === 1 ? '' : 's'})`)
              .join(', ')}
          </div>
        )}
      </CheckItem>

      {checks.map((c) => (
        <CheckItem
          key={c.check}
          title={c.check.charAt(0).toUpperCase() + c.check.slice(1)}
          state={c.level === 'ok' ? 'ok' : 'warning'}
          hint={c.fix}
        >
          <div>{c.level === 'unchecked' ? `Not checked: ${c.message}` : c.message}</div>
        </CheckItem>
      ))}

      {probes.length === 0 ? (
        <CheckItem title="GPU probes" state="warning" hint={NO_PROBES_HINT}>
          <div>None configured</div>
        </CheckItem>
      ) : (
        probes.map((probe, i) => {
          const hint = probeHint(probe);
          return (
            <CheckItem
              key={`${probe.url}-${i}`}
              title={`GPU probe ${probe.url}`}
              state={!probe.ok ? 'failing' : hint ? 'warning' : 'ok'}
              hint={hint}
            >
              {probe.ok && <div>{probe.gpus === undefined ? 'GPU count unknown' : `${probe.gpus} GPU(s)`}</div>}
              {!probe.ok && probe.error && <div>Error: {probe.error}</div>}
            </CheckItem>
          );
        })
      )}

      <CheckItem title="Warm-up window" state="ok">
        <div>
          {setup.warmupWindow || '2m'}: samples this soon after an instance (re)starts are shown but never alerted on.
        </div>
      </CheckItem>
    </ul>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  list: css({
    margin: 0,
    padding: 0,
    border: `1px solid ${theme.colors.border.weak}`,
    borderRadius: theme.shape.radius.default,
  }),
});
