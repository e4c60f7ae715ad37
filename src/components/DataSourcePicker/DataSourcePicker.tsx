import React from 'react';
import { Combobox, ComboboxOption, Field } from '@grafana/ui';

import { DataSourceSelection } from '../../hooks/useDataSourceChoice';

interface Props {
  /** The input's id, unique on the page. */
  id: string;
  width: number;
  selection: DataSourceSelection;
  className?: string;
}

/** The "Data source" field: which Inferscope data source the page asks. */
export function DataSourcePicker({ id, width, selection, className }: Props) {
  const options: Array<ComboboxOption<string>> = selection.dataSources.map((ds) => ({ label: ds.name, value: ds.uid }));
  return (
    <Field label="Data source" className={className}>
      <Combobox
        id={id}
        width={width}
        options={options}
        value={selection.uid}
        onChange={(v) => selection.setUid(v.value)}
      />
    </Field>
  );
}
