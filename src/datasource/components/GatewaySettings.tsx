import React from 'react';
import { Combobox, Field, Input, Stack } from '@grafana/ui';

import { GATEWAY_MODEL_LABELS, GATEWAY_PRESETS, GatewayOptions, GatewayPreset } from '../types';

interface Props {
  gateway: GatewayOptions | undefined;
  onChange: (gateway: GatewayOptions | undefined) => void;
}

/** "a=b, c=d" → {a: "b", c: "d"}; entries without "=" are kept out (the hint says so). */
export function parsePairs(text: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const part of text.split(',')) {
    const i = part.indexOf('=');
    if (i <= 0) {
      continue;
    }
    out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

export function formatPairs(m: Record<string, string> | undefined): string {
  return Object.entries(m ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
}

function badPairs(text: string): boolean {
  return text.split(',').some((p) => p.trim() !== '' && p.indexOf('=') <= 0);
}

/** The gateway in front of the servers: the network segment is its upstream time minus the service's own. */
export function GatewaySettings({ gateway, onChange }: Props) {
  const g = gateway ?? {};
  const preset: GatewayPreset = g.preset ?? 'none';
  const update = (patch: Partial<GatewayOptions>) => {
    const next: GatewayOptions = { ...g, ...patch };
    if ((next.preset ?? 'none') === 'none') {
      onChange(undefined);
      return;
    }
    for (const k of Object.keys(next) as Array<keyof GatewayOptions>) {
      if (next[k] === '' || next[k] === undefined) {
        delete next[k];
      }
    }
    onChange(next);
  };
  const [mapText, setMapText] = React.useState(formatPairs(g.modelMap));
  const [matchText, setMatchText] = React.useState(formatPairs(g.matchers));

  return (
    <>
      <Field
        label="Gateway"
        description="The gateway in front of the servers: the network segment of split and triage is its upstream time minus the service's own."
      >
        <Combobox<GatewayPreset>
          id="inferscope-gateway"
          width={40}
          options={GATEWAY_PRESETS}
          value={preset}
          onChange={(v) => update({ preset: v.value })}
        />
      </Field>
      {preset !== 'none' && (
        <>
          <Stack direction="row" gap={2} wrap="wrap">
            <Field
              label="Gateway metric"
              description={preset === 'custom' ? 'Histogram base name (required).' : "Empty: the preset's."}
            >
              <Input
                id="inferscope-gateway-metric"
                width={40}
                value={g.metric ?? ''}
                placeholder={GATEWAY_PRESETS.find((p) => p.value === preset)?.description.split(/[;,]/)[0] ?? ''}
                onChange={(e) => update({ metric: e.currentTarget.value.trim() })}
              />
            </Field>
            <Field label="Gateway unit" description="seconds, milliseconds or microseconds; empty: the preset's.">
              <Input
                id="inferscope-gateway-unit"
                width={20}
                value={g.unit ?? ''}
                placeholder={preset === 'envoy' || preset === 'istio' ? 'milliseconds' : 'seconds'}
                onChange={(e) => update({ unit: e.currentTarget.value.trim() })}
              />
            </Field>
            <Field
              label="Gateway matchers"
              description='Fixed label matchers, "label=value, …" (Istio: reporter=source by default).'
              invalid={badPairs(matchText)}
              error="Write label=value pairs separated by commas"
            >
              <Input
                id="inferscope-gateway-matchers"
                width={30}
                value={matchText}
                onChange={(e) => {
                  setMatchText(e.currentTarget.value);
                  update({ matchers: parsePairs(e.currentTarget.value) });
                }}
              />
            </Field>
          </Stack>
          <Stack direction="row" gap={2} wrap="wrap">
            <Field label="Model from label" description="The gateway label that names the model.">
              <Input
                id="inferscope-gateway-model-label"
                width={25}
                value={g.modelLabel ?? ''}
                placeholder={GATEWAY_MODEL_LABELS[preset]}
                onChange={(e) => update({ modelLabel: e.currentTarget.value.trim() })}
              />
            </Field>
            <Field label="Model regex" description="Anchored; the model is its replacement (default (.*)).">
              <Input
                id="inferscope-gateway-model-regex"
                width={25}
                value={g.modelRegex ?? ''}
                placeholder="(.+)-svc"
                onChange={(e) => update({ modelRegex: e.currentTarget.value })}
              />
            </Field>
            <Field label="Model replacement" description="From the regex's groups (default $1).">
              <Input
                id="inferscope-gateway-model-replacement"
                width={15}
                value={g.modelReplacement ?? ''}
                placeholder="$1"
                onChange={(e) => update({ modelReplacement: e.currentTarget.value })}
              />
            </Field>
            <Field
              label="Model map"
              description='Static "value=model, …", tried before the regex.'
              invalid={badPairs(mapText)}
              error="Write value=model pairs separated by commas"
            >
              <Input
                id="inferscope-gateway-model-map"
                width={40}
                value={mapText}
                placeholder="rank-svc=recsys-ranker"
                onChange={(e) => {
                  setMapText(e.currentTarget.value);
                  update({ modelMap: parsePairs(e.currentTarget.value) });
                }}
              />
            </Field>
          </Stack>
          <Stack direction="row" gap={2} wrap="wrap">
            <Field label="Version from label" description="Empty: the segment is the model's, every version.">
              <Input
                id="inferscope-gateway-version-label"
                width={25}
                value={g.versionLabel ?? ''}
                onChange={(e) => update({ versionLabel: e.currentTarget.value.trim() })}
              />
            </Field>
            <Field label="Instance from label" description="Empty: the segment is over all instances.">
              <Input
                id="inferscope-gateway-instance-label"
                width={25}
                value={g.instanceLabel ?? ''}
                onChange={(e) => update({ instanceLabel: e.currentTarget.value.trim() })}
              />
            </Field>
            <Field label="Instance regex" description="Anchored; the instance is $1.">
              <Input
                id="inferscope-gateway-instance-regex"
                width={25}
                value={g.instanceRegex ?? ''}
                onChange={(e) => update({ instanceRegex: e.currentTarget.value })}
              />
            </Field>
          </Stack>
        </>
      )}
    </>
  );
}
