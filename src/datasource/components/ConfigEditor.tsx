import React from 'react';
import { css } from '@emotion/css';
import { DataSourcePluginOptionsEditorProps, GrafanaTheme2 } from '@grafana/data';
import {
  AdvancedHttpSettings,
  Auth,
  AuthMethod,
  ConfigSection,
  ConnectionSettings,
  convertLegacyAuthProps,
} from '@grafana/plugin-ui';
import { Divider, Field, SecretInput, useStyles2 } from '@grafana/ui';

import { InferscopeOptions, InferscopeSecureJsonData } from '../types';
import {
  authHeaderIndex,
  BEARER_METHOD,
  bearerTokenConfigured,
  resetBearerToken,
  selectAuthMethod,
  selectedAuthMethod,
  setBearerToken,
  Settings,
} from './auth';
import { InferscopeSettings } from './InferscopeSettings';
import { ProbeCredentials } from './ProbeCredentials';
import { ThanosSettings } from './ThanosSettings';

export type ConfigEditorProps = DataSourcePluginOptionsEditorProps<InferscopeOptions, InferscopeSecureJsonData>;

export function ConfigEditor({ options, onOptionsChange }: ConfigEditorProps) {
  const s = useStyles2(getStyles);

  // An emptied timeout field parses to NaN; store "unset" rather than null.
  const onChange = (next: Settings) => {
    const timeout = next.jsonData.timeout;
    if (timeout !== undefined && !Number.isFinite(timeout)) {
      const { timeout: _drop, ...jsonData } = next.jsonData;
      next = { ...next, jsonData };
    }
    onOptionsChange(next);
  };

  const legacyAuth = convertLegacyAuthProps<Settings>({ config: options, onChange });
  const tokenIndex = authHeaderIndex(options.jsonData);
  const storedToken = tokenIndex === undefined ? '' : (options.secureJsonData?.[`httpHeaderValue${tokenIndex}`] ?? '');

  return (
    <div className={s.container}>
      <p className={s.description}>
        Inferscope computes inference-service series (latency tiers, queue vs compute, jitter, baselines, GPU state)
        from your Prometheus and the Inferscope GPU probes. Fields marked * are required.
      </p>

      <ConnectionSettings
        config={options}
        onChange={onChange}
        urlLabel="Prometheus URL"
        urlPlaceholder="http://prometheus:9090"
        urlTooltip="Base URL of the Prometheus HTTP API (or Thanos, Mimir, VictoriaMetrics), as the Grafana server reaches it."
      />

      <Divider />

      <Auth
        {...legacyAuth}
        selectedMethod={selectedAuthMethod(options)}
        onAuthMethodSelect={(method) => onChange(selectAuthMethod(options, method))}
        visibleMethods={[AuthMethod.NoAuth, AuthMethod.BasicAuth, BEARER_METHOD]}
        customMethods={[
          {
            id: BEARER_METHOD,
            label: 'Bearer token',
            description: 'Send "Authorization: Bearer <token>" with every request to Prometheus',
            component: (
              <Field label="Token" description="Stored encrypted; never sent back to the browser.">
                <SecretInput
                  id="inferscope-bearer-token"
                  width={60}
                  placeholder="Token"
                  isConfigured={bearerTokenConfigured(options)}
                  value={storedToken.replace(/^Bearer\s+/i, '')}
                  onChange={(e) => onChange(setBearerToken(options, e.currentTarget.value))}
                  onReset={() => onChange(resetBearerToken(options))}
                />
              </Field>
            ),
          },
        ]}
      />

      <Divider />

      <ConfigSection
        title="Additional settings"
        description="Timeout and cookies of the requests to Prometheus."
        isCollapsible
        isInitiallyOpen={options.jsonData.timeout !== undefined}
      >
        <AdvancedHttpSettings config={options} onChange={onChange} />
      </ConfigSection>

      <ThanosSettings options={options} onOptionsChange={onChange} />

      <Divider />

      <InferscopeSettings options={options} onOptionsChange={onChange} />
      <ProbeCredentials options={options} onOptionsChange={onChange} />
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  container: css({ maxWidth: 720 }),
  description: css({ color: theme.colors.text.secondary, marginBottom: theme.spacing(2) }),
});
