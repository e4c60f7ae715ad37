import { ProbeStatus, ProfileStatus, PrometheusStatus } from '../../api/setup';

// Fix-it hints read the backend's human error message and point at the one setting
// most likely to be wrong. They only suggest; the error itself is always shown too.

export function prometheusHint(status: PrometheusStatus): string | undefined {
  if (status.ok) {
    return undefined;
  }
  const e = (status.error ?? '').toLowerCase();
  if (!status.url) {
    return 'Set the Prometheus URL in the data source settings, for example http://prometheus:9090.';
  }
  if (/\b(401|403)\b|unauthori[sz]ed|forbidden/.test(e)) {
    return 'Prometheus refused the credentials: check the authentication method, user, password or bearer token in the data source settings.';
  }
  if (/x509|certificate|tls/.test(e)) {
    return 'The TLS handshake failed: add the CA certificate under TLS settings, or enable "Skip TLS certificate validation" for a test set-up.';
  }
  if (/timeout|deadline|timed out/.test(e)) {
    return 'Prometheus did not answer in time: check that it is up and not overloaded, or raise the timeout under Advanced HTTP settings.';
  }
  if (/\b404\b|not found/.test(e)) {
    return 'The URL answers but is not the Prometheus HTTP API: use the base URL (without /api/v1), including any path prefix of a proxy.';
  }
  return 'The URL must be reachable from the Grafana server (not from your browser): check the host name, port and any proxy between them.';
}

export function profileHint(profile: ProfileStatus): string | undefined {
  if (!profile.name) {
    return 'No known inference-server metrics were found in Prometheus: check that Prometheus scrapes your inference servers, or pick the metric profile in the data source settings.';
  }
  return undefined;
}

export function probeHint(probe: ProbeStatus): string | undefined {
  if (!probe.ok) {
    const e = (probe.error ?? '').toLowerCase();
    if (/\b(401|403)\b|unauthori[sz]ed|forbidden/.test(e)) {
      return 'The probe requires credentials: its --web.config.file enables authentication that the data source does not send.';
    }
    return 'Check that inferscope-probe runs on that node and listens on this address (default port 9835), and that the Grafana server can reach it.';
  }
  if (probe.gpus === 0) {
    return "The probe answers but sees no GPU: check the NVIDIA driver (libnvidia-ml.so.1) on the node, or the container's GPU access.";
  }
  return undefined;
}

export const NO_PROBES_HINT =
  'No probe URLs are configured: live GPU state is unavailable (Prometheus metrics still work). Add the probes in the data source settings.';
