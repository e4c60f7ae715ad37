import React, { useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Combobox, Field, Input, Switch, useStyles2 } from '@grafana/ui';

import { RuleParam } from '../../api/alerting';

interface Props {
  params: RuleParam[];
  /** Sections to show, in order. */
  sections: Array<RuleParam['section']>;
  /** Parameters shown elsewhere on the page. */
  exclude?: string[];
  onChange: (name: string, value: string) => void;
}

const sectionTitle: Record<RuleParam['section'], string> = {
  placement: 'Placement',
  grafana: 'Grafana',
  routing: 'Routing',
  thresholds: 'Thresholds and hold times',
  metrics: 'Metric names',
};

/** The catalog's parameters, edited as text and committed when a field loses focus. */
export function ParamsForm({ params, sections, exclude = [], onChange }: Props) {
  const s = useStyles2(getStyles);
  return (
    <>
      {sections.map((section) => {
        const shown = params.filter((p) => p.section === section && !exclude.includes(p.name));
        if (shown.length === 0) {
          return null;
        }
        return (
          <fieldset key={section} className={s.fieldset}>
            <legend className={s.legend}>{sectionTitle[section]}</legend>
            <div className={s.grid}>
              {shown.map((p) => (
                // Keyed by value: a new value from the data source starts the field afresh.
                <ParamField key={`${p.name}=${p.value}`} param={p} onChange={onChange} />
              ))}
            </div>
          </fieldset>
        );
      })}
    </>
  );
}

function ParamField({ param, onChange }: { param: RuleParam; onChange: (name: string, value: string) => void }) {
  const [text, setText] = useState(param.value);
  const id = `inferscope-param-${param.name}`;
  const description = param.fixed ? `${param.help} (set in the data source's settings)` : param.help;
  if (param.kind === 'bool') {
    return (
      <Field label={param.name} description={description}>
        <Switch
          id={id}
          value={param.value === 'true'}
          disabled={param.fixed}
          onChange={(e) => onChange(param.name, String(e.currentTarget.checked))}
        />
      </Field>
    );
  }
  if (param.choices && param.choices.length > 0) {
    return (
      <Field label={param.name} description={description}>
        <Combobox
          id={id}
          options={param.choices.map((c) => ({ label: c, value: c }))}
          value={param.value}
          disabled={param.fixed}
          onChange={(v) => onChange(param.name, v.value)}
        />
      </Field>
    );
  }
  return (
    <Field label={param.name} description={description}>
      <Input
        id={id}
        value={text}
        disabled={param.fixed}
        placeholder={param.default}
        onChange={(e) => setText(e.currentTarget.value)}
        onBlur={() => text !== param.value && onChange(param.name, text)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && text !== param.value) {
            onChange(param.name, text);
          }
        }}
      />
    </Field>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  fieldset: css({ border: 'none', padding: 0, margin: theme.spacing(0, 0, 2, 0) }),
  legend: css({ fontSize: theme.typography.h5.fontSize, marginBottom: theme.spacing(1) }),
  grid: css({
    display: 'grid',
    gridTemplateColumns: 'repeat(auto-fill, minmax(260px, 1fr))',
    columnGap: theme.spacing(2),
  }),
});
