import React from 'react';
import { QueryEditorProps } from '@grafana/data';
import { Field, Input, RadioButtonGroup, Stack } from '@grafana/ui';

import type { DataSource } from '../datasource';
import type { InferscopeOptions, InferscopeQuery } from '../types';
import type { VariableKind, VariableQuery } from '../variables';

const KINDS: Array<{ value: VariableKind; label: string; description: string }> = [
  { value: 'model', label: 'Model', description: 'Models the inference servers report' },
  { value: 'version', label: 'Version', description: 'Versions, of the chosen models when Model is set' },
  { value: 'instance', label: 'Instance', description: 'Inference instances (host:port)' },
  { value: 'gpu', label: 'GPU', description: 'GPU ids, on the nodes of the chosen instances when Instance is set' },
];

type Props = QueryEditorProps<DataSource, InferscopeQuery, InferscopeOptions, VariableQuery>;

/** Edits a template variable's query: what to list and which other variable narrows it. */
export function VariableQueryEditor({ query, onChange }: Props) {
  const kind: VariableKind = query?.kind ?? 'model';
  const refId = query?.refId ?? 'InferscopeVariableQuery';
  const update = (patch: Partial<VariableQuery>) => onChange({ ...query, refId, kind, ...patch });
  const description = KINDS.find((k) => k.value === kind)?.description;

  return (
    <Stack direction="column" gap={1}>
      <Field label="Values of" description={description}>
        <RadioButtonGroup<VariableKind>
          options={KINDS.map(({ value, label }) => ({ value, label }))}
          value={kind}
          onChange={(v) => update({ kind: v })}
        />
      </Field>
      {kind === 'version' && (
        <Field label="Model" description='Only versions of these models, e.g. "$model". Empty: every model.'>
          <Input
            id="inferscope-variable-model"
            width={30}
            value={query?.model ?? ''}
            placeholder="$model"
            onChange={(e) => update({ model: e.currentTarget.value })}
          />
        </Field>
      )}
      {kind === 'gpu' && (
        <Field
          label="Instance"
          description='Only GPUs on these instances&apos; nodes, e.g. "$instance". Empty: every node.'
        >
          <Input
            id="inferscope-variable-instance"
            width={30}
            value={query?.instance ?? ''}
            placeholder="$instance"
            onChange={(e) => update({ instance: e.currentTarget.value })}
          />
        </Field>
      )}
    </Stack>
  );
}
