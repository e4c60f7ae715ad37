import React from 'react';
import { ConfigSection } from '@grafana/plugin-ui';
import { Field, RadioButtonGroup } from '@grafana/ui';

import { InferscopeOptions } from '../types';
import { Settings } from './auth';

interface Props {
  options: Settings;
  onOptionsChange: (options: Settings) => void;
}

type ThanosKey = keyof Pick<InferscopeOptions, 'thanosDedup' | 'thanosPartialResponse'>;

// Unset sends nothing, so the querier's own flags decide (docs/stores.md).
const DEFAULT = 'default';
const choices = [
  { label: "Querier's default", value: DEFAULT },
  { label: 'On', value: 'on' },
  { label: 'Off', value: 'off' },
];

const parameters: Array<{ key: ThanosKey; label: string; description: string }> = [
  {
    key: 'thanosDedup',
    label: 'Deduplication',
    description: "dedup: merge the replicas of an HA pair. Off shows every replica's series.",
  },
  {
    key: 'thanosPartialResponse',
    label: 'Partial response',
    description:
      'partial_response: On answers without an unreachable store (with a notice); Off makes it an error naming the store.',
  },
];

/** Thanos querier parameters: dedup and partial_response. */
export function ThanosSettings({ options, onOptionsChange }: Props) {
  const { jsonData } = options;
  const current = (key: ThanosKey) => (jsonData[key] === undefined ? DEFAULT : jsonData[key] ? 'on' : 'off');
  const set = (key: ThanosKey, choice: string) => {
    const { [key]: _drop, ...rest } = jsonData;
    onOptionsChange({
      ...options,
      jsonData: choice === DEFAULT ? rest : { ...rest, [key]: choice === 'on' },
    });
  };

  return (
    <ConfigSection
      title="Thanos querier"
      description="Sent only to a Thanos querier (known from its build info); never to another store."
      isCollapsible
      isInitiallyOpen={jsonData.thanosDedup !== undefined || jsonData.thanosPartialResponse !== undefined}
    >
      {parameters.map(({ key, label, description }) => (
        <Field key={key} label={label} description={description}>
          <RadioButtonGroup
            aria-label={`Thanos ${label.toLowerCase()}`}
            options={choices}
            value={current(key)}
            onChange={(v) => set(key, v)}
          />
        </Field>
      ))}
    </ConfigSection>
  );
}
