import { useCallback, useEffect, useState } from 'react';

import { fetchSetup, SetupStatus } from '../../api/setup';

export type SetupState =
  { kind: 'idle' } | { kind: 'loading' } | { kind: 'loaded'; setup: SetupStatus } | { kind: 'failed'; message: string };

/** Loads the setup resource of one data source; `recheck` asks again. */
export function useSetup(uid: string | undefined): [SetupState, () => void] {
  const [attempt, setAttempt] = useState(0);
  // Each answer is tagged with the request it belongs to, so a late answer for an
  // earlier uid or attempt is never shown as the current one.
  const [result, setResult] = useState<{ key: string; state: SetupState }>();
  const key = `${uid ?? ''}#${attempt}`;

  useEffect(() => {
    if (!uid) {
      return;
    }
    let current = true;
    fetchSetup(uid).then(
      (setup) => current && setResult({ key, state: { kind: 'loaded', setup } }),
      (err: unknown) =>
        current &&
        setResult({ key, state: { kind: 'failed', message: err instanceof Error ? err.message : String(err) } })
    );
    return () => {
      current = false;
    };
  }, [uid, key]);

  const recheck = useCallback(() => setAttempt((n) => n + 1), []);
  if (!uid) {
    return [{ kind: 'idle' }, recheck];
  }
  return [result?.key === key ? result.state : { kind: 'loading' }, recheck];
}
