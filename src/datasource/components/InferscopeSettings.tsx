import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { ConfigSection } from '@grafana/plugin-ui';
import { Button, Combobox, Field, IconButton, Input, Stack, useStyles2 } from '@grafana/ui';

import { validateWarmupWindow } from '../duration';
import { DEFAULT_PROFILE, DEFAULT_WARMUP_WINDOW, InferscopeOptions, METRIC_PROFILES, MetricProfile } from '../types';
import { Settings } from './auth';
import { GatewaySettings } from './GatewaySettings';

interface Props {
  options: Settings;
  onOptionsChange: (options: Settings) => void;
}

function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/** Inferscope's own options: GPU probes, warm-up window, metric profile, label names and the gateway. */
export function InferscopeSettings({ options, onOptionsChange }: Props) {
  const s = useStyles2(getStyles);
  const { jsonData } = options;
  const probeUrls = jsonData.probeUrls ?? [];

  const update = (patch: Partial<InferscopeOptions>) =>
    onOptionsChange({ ...options, jsonData: { ...jsonData, ...patch } });
  const setProbe = (i: number, url: string) => update({ probeUrls: probeUrls.map((u, j) => (j === i ? url : u)) });
  const removeProbe = (i: number) => update({ probeUrls: probeUrls.filter((_, j) => j !== i) });
  const addProbe = () => update({ probeUrls: [...probeUrls, ''] });

  const warmupError = validateWarmupWindow(jsonData.warmupWindow);

  return (
    <ConfigSection title="Inferscope" description="GPU probes, warm-up handling and how to read the metrics.">
      <Field
        label="GPU probe URLs"
        description="Base URLs of inferscope-probe on the GPU nodes, for live GPU state (the probes' metrics reach Inferscope through Prometheus anyway)."
      >
        <div className={s.probes}>
          {probeUrls.map((url, i) => {
            const invalid = url.trim() !== '' && !isHttpUrl(url.trim());
            return (
              <Stack key={i} direction="row" alignItems="center" gap={1}>
                <Input
                  aria-label={`Probe URL ${i + 1}`}
                  width={50}
                  value={url}
                  placeholder="http://gpu-node-1:9835"
                  invalid={invalid}
                  onChange={(e) => setProbe(i, e.currentTarget.value)}
                />
                <IconButton name="trash-alt" tooltip={`Remove probe URL ${i + 1}`} onClick={() => removeProbe(i)} />
                {invalid && <span className={s.error}>Not an http(s) URL</span>}
              </Stack>
            );
          })}
          <div>
            <Button variant="secondary" size="sm" icon="plus" onClick={addProbe} type="button">
              Add probe URL
            </Button>
          </div>
        </div>
      </Field>

      <Field
        label="Warm-up window"
        description="After an instance (re)starts, its samples are shown but never alerted on for this long. Default 2m."
        invalid={warmupError !== undefined}
        error={warmupError}
      >
        <Input
          id="inferscope-warmup-window"
          width={20}
          value={jsonData.warmupWindow ?? ''}
          placeholder={DEFAULT_WARMUP_WINDOW}
          onChange={(e) => update({ warmupWindow: e.currentTarget.value.trim() })}
        />
      </Field>

      <Field label="Metric profile" description="Which inference server's metric names to read.">
        <Combobox<MetricProfile>
          id="inferscope-profile"
          width={40}
          options={METRIC_PROFILES}
          value={jsonData.profile ?? DEFAULT_PROFILE}
          onChange={(v) => update({ profile: v.value })}
        />
      </Field>

      <Stack direction="row" gap={2} wrap="wrap">
        <Field label="Model label" description="Empty: the profile's own.">
          <Input
            id="inferscope-model-label"
            width={20}
            value={jsonData.modelLabel ?? ''}
            placeholder="model_name"
            onChange={(e) => update({ modelLabel: e.currentTarget.value.trim() })}
          />
        </Field>
        <Field label="Version label" description="Empty: the profile's own.">
          <Input
            id="inferscope-version-label"
            width={20}
            value={jsonData.versionLabel ?? ''}
            placeholder="model_version"
            onChange={(e) => update({ versionLabel: e.currentTarget.value.trim() })}
          />
        </Field>
        <Field label="Instance label" description="Empty: the profile's own.">
          <Input
            id="inferscope-instance-label"
            width={20}
            value={jsonData.instanceLabel ?? ''}
            placeholder="instance"
            onChange={(e) => update({ instanceLabel: e.currentTarget.value.trim() })}
          />
        </Field>
      </Stack>

      <GatewaySettings gateway={jsonData.gateway} onChange={(gateway) => update({ gateway })} />
    </ConfigSection>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  probes: css({ display: 'flex', flexDirection: 'column', gap: theme.spacing(1) }),
  error: css({ color: theme.colors.error.text }),
});
