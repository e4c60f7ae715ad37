import React, { useState } from 'react';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { DataSourceSettings } from '@grafana/data';

import { InferscopeOptions, InferscopeSecureJsonData } from '../types';
import { ConfigEditor } from './ConfigEditor';

type Settings = DataSourceSettings<InferscopeOptions, InferscopeSecureJsonData>;

function settings(overrides: Partial<Settings> = {}): Settings {
  return {
    id: 1,
    uid: 'inferscope',
    orgId: 1,
    name: 'Inferscope',
    type: 'inferscope-monitor-datasource',
    typeName: 'Inferscope',
    typeLogoUrl: '',
    access: 'proxy',
    url: '',
    user: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    withCredentials: false,
    readOnly: false,
    jsonData: {},
    secureJsonFields: {},
    ...overrides,
  } as Settings;
}

/** Holds the options like Grafana's data source page does, so typing accumulates. */
function renderEditor(initial: Settings = settings()) {
  const changes: Settings[] = [];
  function Harness() {
    const [options, setOptions] = useState(initial);
    return (
      <ConfigEditor
        options={options}
        onOptionsChange={(next) => {
          changes.push(next);
          setOptions(next);
        }}
      />
    );
  }
  render(<Harness />);
  const latest = () => changes[changes.length - 1];
  return { changes, latest };
}

async function chooseAuthMethod(label: string) {
  await userEvent.click(screen.getByLabelText('Authentication method'));
  await userEvent.click(await screen.findByText(label));
}

describe('ConfigEditor', () => {
  test('typing the Prometheus URL sets the url', async () => {
    const { latest } = renderEditor();
    await userEvent.click(screen.getByLabelText('Data source connection URL'));
    await userEvent.paste('http://prometheus:9090');
    expect(latest().url).toBe('http://prometheus:9090');
  });

  test('probe URLs can be added, typed and removed', async () => {
    const { latest } = renderEditor();
    await userEvent.click(screen.getByRole('button', { name: /add probe url/i }));
    await userEvent.click(screen.getByLabelText('Probe URL 1'));
    await userEvent.paste('http://probe:9835');
    await userEvent.click(screen.getByRole('button', { name: /add probe url/i }));
    await userEvent.click(screen.getByLabelText('Probe URL 2'));
    await userEvent.paste('http://gpu-node-2:9835');
    expect(latest().jsonData.probeUrls).toEqual(['http://probe:9835', 'http://gpu-node-2:9835']);

    await userEvent.click(screen.getByRole('button', { name: 'Remove probe URL 1' }));
    expect(latest().jsonData.probeUrls).toEqual(['http://gpu-node-2:9835']);
    expect(screen.getByLabelText('Probe URL 1')).toHaveValue('http://gpu-node-2:9835');
  });

  test('a probe URL that is not http(s) is flagged', async () => {
    renderEditor(settings({ jsonData: { probeUrls: ['probe:9835'] } }));
    expect(screen.getByText('Not an http(s) URL')).toBeInTheDocument();
  });

  test('the warm-up window is stored as typed and validated as a duration', async () => {
    const { latest } = renderEditor();
    const input = screen.getByLabelText(/warm-up window/i);
    expect(input).toHaveAttribute('placeholder', '2m');

    await userEvent.click(input);
    await userEvent.paste('1m30s');
    expect(latest().jsonData.warmupWindow).toBe('1m30s');
    expect(screen.queryByText(/use a duration such as/i)).not.toBeInTheDocument();

    await userEvent.clear(input);
    await userEvent.paste('2 minutes');
    expect(screen.getByText(/use a duration such as/i)).toBeInTheDocument();
  });

  test('basic auth keeps the user in the settings and the password only in secureJsonData', async () => {
    const { latest } = renderEditor();
    await chooseAuthMethod('Basic authentication');
    expect(latest().basicAuth).toBe(true);

    await userEvent.click(screen.getByPlaceholderText('User'));
    await userEvent.paste('grafana');
    await userEvent.click(screen.getByPlaceholderText('Password'));
    await userEvent.paste('s3cret');

    expect(latest().basicAuthUser).toBe('grafana');
    expect(latest().secureJsonData?.basicAuthPassword).toBe('s3cret');
    expect(JSON.stringify(latest().jsonData)).not.toContain('s3cret');
  });

  test('a bearer token becomes a secure Authorization header', async () => {
    const { latest } = renderEditor();
    await chooseAuthMethod('Bearer token');
    expect(latest().basicAuth).toBe(false);
    expect(latest().jsonData.httpHeaderName1).toBe('Authorization');

    await userEvent.click(screen.getByPlaceholderText('Token'));
    await userEvent.paste('abc123');

    expect(latest().secureJsonData?.httpHeaderValue1).toBe('Bearer abc123');
    expect(JSON.stringify(latest().jsonData)).not.toContain('abc123');
  });

  test('a stored bearer token shows as configured and leaving bearer clears it', async () => {
    const { latest } = renderEditor(
      settings({
        jsonData: { httpHeaderName1: 'Authorization', httpHeaderName2: 'X-Scope-OrgID' },
        secureJsonFields: { httpHeaderValue1: true, httpHeaderValue2: true },
      })
    );
    expect(screen.getByText('Bearer token')).toBeInTheDocument();
    expect(screen.getByPlaceholderText('Token')).toHaveValue('configured');

    await chooseAuthMethod('No Authentication');

    const next = latest();
    expect(next.jsonData.httpHeaderName1).toBeUndefined();
    expect(next.jsonData.httpHeaderName2).toBe('X-Scope-OrgID');
    expect(next.secureJsonFields.httpHeaderValue1).toBe(false);
    expect(next.secureJsonFields.httpHeaderValue2).toBe(true);
    expect(next.secureJsonData?.httpHeaderValue1).toBe('');
  });

  test('TLS: a CA certificate goes to secureJsonData, skip-verify to jsonData', async () => {
    const { latest } = renderEditor();
    await userEvent.click(screen.getByLabelText('Add self-signed certificate'));
    expect(latest().jsonData.tlsAuthWithCACert).toBe(true);

    await userEvent.click(screen.getByPlaceholderText('Begins with --- BEGIN CERTIFICATE ---'));
    await userEvent.paste('PEM-DATA');
    expect(latest().secureJsonData?.tlsCACert).toBe('PEM-DATA');
    expect(JSON.stringify(latest().jsonData)).not.toContain('PEM-DATA');

    await userEvent.click(screen.getByLabelText('Skip TLS certificate validation'));
    expect(latest().jsonData.tlsSkipVerify).toBe(true);
  });

  test('the timeout is a number of seconds, and clearing it unsets it', async () => {
    const { latest } = renderEditor();
    await userEvent.click(screen.getByRole('button', { name: 'Expand section Additional settings' }));
    const timeout = screen.getByLabelText('Timeout in seconds');

    await userEvent.type(timeout, '30');
    expect(latest().jsonData.timeout).toBe(30);

    await userEvent.clear(timeout);
    expect(latest().jsonData).not.toHaveProperty('timeout');
  });

  test('the metric profile defaults to auto-detect and can be chosen', async () => {
    const { latest } = renderEditor();
    const profile = screen.getByRole('combobox', { name: /metric profile/i });
    expect(profile).toHaveValue('Auto-detect');

    await userEvent.click(profile);
    await userEvent.click(await screen.findByRole('option', { name: /vLLM/ }));
    expect(latest().jsonData.profile).toBe('vllm');
  });
  test('the gateway defaults to none; choosing ingress-nginx and a mapping fills jsonData.gateway', async () => {
    const { latest } = renderEditor();
    const gateway = screen.getByRole('combobox', { name: /^gateway/i });
    expect(gateway).toHaveValue('None');
    expect(screen.queryByLabelText(/model regex/i)).not.toBeInTheDocument();

    await userEvent.click(gateway);
    await userEvent.click(await screen.findByRole('option', { name: /ingress-nginx/ }));
    expect(latest().jsonData.gateway).toEqual({ preset: 'ingress-nginx' });
    expect(screen.getByLabelText(/model from label/i)).toHaveAttribute('placeholder', 'service');

    await userEvent.click(screen.getByLabelText(/model regex/i));
    await userEvent.paste('(.+)-svc');
    await userEvent.click(screen.getByLabelText(/model map/i));
    await userEvent.paste('rank-svc=recsys-ranker, embed=text-embedder');
    expect(latest().jsonData.gateway).toEqual({
      preset: 'ingress-nginx',
      modelRegex: '(.+)-svc',
      modelMap: { 'rank-svc': 'recsys-ranker', embed: 'text-embedder' },
    });

    await userEvent.click(screen.getByLabelText(/gateway matchers/i));
    await userEvent.paste('reporter');
    expect(screen.getByText(/write label=value pairs/i)).toBeInTheDocument();
  });

  test('a stored gateway is shown, and choosing none removes it', async () => {
    const { latest } = renderEditor(
      settings({
        jsonData: {
          gateway: { preset: 'istio', matchers: { reporter: 'destination' }, versionLabel: 'destination_version' },
        },
      })
    );
    expect(screen.getByLabelText(/gateway matchers/i)).toHaveValue('reporter=destination');
    expect(screen.getByLabelText(/version from label/i)).toHaveValue('destination_version');
    await userEvent.click(screen.getByRole('combobox', { name: /^gateway/i }));
    await userEvent.click(await screen.findByRole('option', { name: /^None/ }));
    expect(latest().jsonData.gateway).toBeUndefined();
  });

  test('probe credentials: the user in jsonData, the password and CA only in secureJsonData', async () => {
    const { latest } = renderEditor();
    await userEvent.click(screen.getByRole('button', { name: 'Expand section Probe credentials' }));
    await userEvent.type(screen.getByLabelText('Basic-auth user'), 'grafana');
    await userEvent.type(screen.getByLabelText('Basic-auth password'), 's3cret');
    await userEvent.type(screen.getByLabelText(/^CA certificate/), 'PEM');
    expect(latest().jsonData.probeBasicAuthUser).toBe('grafana');
    expect(latest().secureJsonData?.probeBasicAuthPassword).toBe('s3cret');
    expect(latest().secureJsonData?.probeTlsCACert).toBe('PEM');
    expect(JSON.stringify(latest().jsonData)).not.toContain('s3cret');
    expect(latest().basicAuth).toBe(false); // Prometheus' own authentication is untouched
  });

  test('a configured probe password is shown as set and can be reset', async () => {
    const { latest } = renderEditor(
      settings({ jsonData: { probeBasicAuthUser: 'grafana' }, secureJsonFields: { probeBasicAuthPassword: true } })
    );
    const reset = screen.getAllByRole('button', { name: 'Reset' });
    expect(reset.length).toBeGreaterThan(0);
    await userEvent.click(reset[reset.length - 1]);
    expect(latest().secureJsonFields.probeBasicAuthPassword).toBe(false);
    expect(latest().secureJsonData?.probeBasicAuthPassword).toBe('');
  });
  test('Thanos parameters: unset by default, On/Off stored as booleans, the default removes them', async () => {
    const { latest } = renderEditor();
    await userEvent.click(screen.getByRole('button', { name: 'Expand section Thanos querier' }));
    const partial = within(screen.getByRole('radiogroup', { name: 'Thanos partial response' }));
    expect(partial.getByLabelText("Querier's default")).toBeChecked();
    await userEvent.click(partial.getByLabelText('Off'));
    expect(latest().jsonData.thanosPartialResponse).toBe(false);
    const dedup = within(screen.getByRole('radiogroup', { name: 'Thanos deduplication' }));
    await userEvent.click(dedup.getByLabelText('On'));
    expect(latest().jsonData).toMatchObject({ thanosDedup: true, thanosPartialResponse: false });
    await userEvent.click(partial.getByLabelText("Querier's default"));
    expect('thanosPartialResponse' in latest().jsonData).toBe(false);
    expect(latest().jsonData.thanosDedup).toBe(true);
  });

  test('stored Thanos parameters open the section with their choice', () => {
    renderEditor(settings({ jsonData: { thanosDedup: false } }));
    const dedup = within(screen.getByRole('radiogroup', { name: 'Thanos deduplication' }));
    expect(dedup.getByLabelText('Off')).toBeChecked();
  });
});
