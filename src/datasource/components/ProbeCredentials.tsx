import React from 'react';
import { ConfigSection } from '@grafana/plugin-ui';
import { Field, InlineSwitch, Input, SecretInput, SecretTextArea } from '@grafana/ui';

import { InferscopeSecureJsonData } from '../types';
import { Settings } from './auth';

interface Props {
  options: Settings;
  onOptionsChange: (options: Settings) => void;
}

type SecretKey = keyof Pick<
  InferscopeSecureJsonData,
  'probeBasicAuthPassword' | 'probeBearerToken' | 'probeTlsCACert' | 'probeTlsClientCert' | 'probeTlsClientKey'
>;

/** The GPU probes' own credentials (their --web.config.file: basic auth or a token, TLS). */
export function ProbeCredentials({ options, onOptionsChange }: Props) {
  const { jsonData } = options;
  const configured = (key: SecretKey) => options.secureJsonFields?.[key] === true;
  const setSecret = (key: SecretKey, value: string) =>
    onOptionsChange({ ...options, secureJsonData: { ...options.secureJsonData, [key]: value } });
  const resetSecret = (key: SecretKey) =>
    onOptionsChange({
      ...options,
      secureJsonFields: { ...options.secureJsonFields, [key]: false },
      secureJsonData: { ...options.secureJsonData, [key]: '' },
    });
  const secret = (key: SecretKey) => ({
    isConfigured: configured(key),
    value: options.secureJsonData?.[key] ?? '',
    onReset: () => resetSecret(key),
  });

  return (
    <ConfigSection
      title="Probe credentials"
      description="When the probes run with --web.config.file (basic auth, TLS). These are the probes' own, never sent to Prometheus; secrets are stored encrypted."
      isCollapsible
      isInitiallyOpen={
        jsonData.probeBasicAuthUser !== undefined || configured('probeBearerToken') || configured('probeTlsCACert')
      }
    >
      <Field label="Basic-auth user">
        <Input
          id="inferscope-probe-user"
          width={30}
          value={jsonData.probeBasicAuthUser ?? ''}
          onChange={(e) =>
            onOptionsChange({
              ...options,
              jsonData: { ...jsonData, probeBasicAuthUser: e.currentTarget.value.trim() || undefined },
            })
          }
        />
      </Field>
      <Field label="Basic-auth password">
        <SecretInput
          id="inferscope-probe-password"
          width={30}
          {...secret('probeBasicAuthPassword')}
          onChange={(e) => setSecret('probeBasicAuthPassword', e.currentTarget.value)}
        />
      </Field>
      <Field label="Bearer token" description="Instead of basic auth.">
        <SecretInput
          id="inferscope-probe-token"
          width={50}
          {...secret('probeBearerToken')}
          onChange={(e) => setSecret('probeBearerToken', e.currentTarget.value)}
        />
      </Field>
      <Field label="CA certificate" description="PEM; the CA that signed the probes' certificates.">
        <SecretTextArea
          id="inferscope-probe-ca"
          cols={60}
          rows={4}
          {...secret('probeTlsCACert')}
          onChange={(e) => setSecret('probeTlsCACert', e.currentTarget.value)}
        />
      </Field>
      <Field label="Client certificate" description="PEM, with its key below, when the probes ask for one.">
        <SecretTextArea
          id="inferscope-probe-client-cert"
          cols={60}
          rows={4}
          {...secret('probeTlsClientCert')}
          onChange={(e) => setSecret('probeTlsClientCert', e.currentTarget.value)}
        />
      </Field>
      <Field label="Client key">
        <SecretTextArea
          id="inferscope-probe-client-key"
          cols={60}
          rows={4}
          {...secret('probeTlsClientKey')}
          onChange={(e) => setSecret('probeTlsClientKey', e.currentTarget.value)}
        />
      </Field>
      <Field label="Skip TLS verification" description="Not for production: any certificate is accepted.">
        <InlineSwitch
          id="inferscope-probe-skip-verify"
          value={jsonData.probeTlsSkipVerify ?? false}
          onChange={(e) =>
            onOptionsChange({ ...options, jsonData: { ...jsonData, probeTlsSkipVerify: e.currentTarget.checked } })
          }
        />
      </Field>
    </ConfigSection>
  );
}
