import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { config } from '@grafana/runtime';
import { useStyles2 } from '@grafana/ui';

import { GateRequest, pipelineUrl } from '../../api/gate';

interface Props {
  uid: string;
  request: GateRequest;
}

/** This Grafana's address as deployment tools reach it; a placeholder where it is unknown. */
function grafanaAddress(): string {
  const url = config.appUrl ?? '';
  return url.startsWith('http') ? url : 'https://grafana.example/';
}

/**
 * The same gate for a deployment pipeline (docs/gate.md): Argo Rollouts' web provider decides
 * on the JSON verdict (it counts non-2xx as an error), Flagger's load tester on the status code.
 */
export function PipelineBox({ uid, request }: Props) {
  const s = useStyles2(getStyles);
  const base = grafanaAddress();
  const argo = pipelineUrl(base, uid, request, false);
  const flagger = pipelineUrl(base, uid, request, true);
  return (
    <section className={s.box} aria-label="Use it in your pipeline">
      <h4>Use it in your pipeline</h4>
      <p className={s.hint}>
        Call the resource with a Grafana service-account token (Viewer is enough) in{' '}
        <code>Authorization: Bearer glsa_…</code>. The full templates are in docs/gate.md.
      </p>
      <h5>Argo Rollouts (AnalysisTemplate, web provider)</h5>
      <p className={s.hint}>
        statusCodes=false: every verdict answers 200 and the JSON decides; insufficient data is inconclusive and pauses
        the roll-out.
      </p>
      <pre className={s.code} aria-label="Argo Rollouts">
        {`provider:
  web:
    url: "${argo}"
    headers:
      - key: Authorization
        value: "Bearer {{args.grafana-token}}"
    jsonPath: "{$}"
successCondition: result.verdict == "pass"
failureCondition: result.verdict == "fail"`}
      </pre>
      <h5>Flagger (load tester cmd webhook)</h5>
      <p className={s.hint}>
        Status codes: 200 pass, 412 fail, 409 insufficient data; curl --fail halts the canary on both.
      </p>
      <pre className={s.code} aria-label="Flagger">
        {`webhooks:
  - name: inferscope-gate
    type: rollout
    url: http://flagger-loadtester.test/
    metadata:
      type: cmd
      cmd: >-
        curl --fail --silent --show-error
        -H "Authorization: Bearer $GRAFANA_TOKEN"
        "${flagger}"`}
      </pre>
    </section>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  box: css({
    marginTop: theme.spacing(3),
    padding: theme.spacing(2),
    border: `1px solid ${theme.colors.border.weak}`,
    borderRadius: theme.shape.radius.default,
    background: theme.colors.background.secondary,
  }),
  hint: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
  code: css({ whiteSpace: 'pre-wrap', wordBreak: 'break-all', fontSize: theme.typography.bodySmall.fontSize }),
});
