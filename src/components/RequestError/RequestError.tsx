import React, { ReactNode } from 'react';
import { Alert } from '@grafana/ui';

import { errorMessage, ResourceRequestError } from '../../api/resource';

export interface RequestFailureView {
  title: string;
  message: string;
  hint?: string;
}

/**
 * What a failed resource request means to the user, by its HTTP status. `prometheusHint` is the
 * advice when the data source could not read Prometheus.
 */
export function requestFailure(err: unknown, prometheusHint: string): RequestFailureView {
  const message = errorMessage(err);
  switch (err instanceof ResourceRequestError ? err.status : undefined) {
    case 400:
      return { title: 'The data source refused the request', message };
    case 401:
      return {
        title: 'Prometheus refused the credentials',
        message,
        hint: 'Check the authentication in the data source settings.',
      };
    case 502:
    case 504:
      return { title: 'Prometheus could not be read', message, hint: prometheusHint };
    default:
      return { title: 'The data source did not answer', message };
  }
}

interface AlertProps {
  title: string;
  message: string;
  hint?: ReactNode;
  testId?: string;
}

/** A failed request: what failed, the data source's words and what to check. */
export function RequestErrorAlert({ title, message, hint, testId }: AlertProps) {
  return (
    <div data-testid={testId}>
      <Alert severity="error" title={title}>
        <p>{message}</p>
        {hint && <p>{hint}</p>}
      </Alert>
    </div>
  );
}
