import { useCallback, useState } from 'react';

import { fetchSetup, SetupStatus } from '../../api/setup';
import { RequestState, useRequest } from '../../hooks/useRequest';

/** Loads the setup resource of one data source (undefined without one); `recheck` asks again. */
export function useSetup(uid: string | undefined): [RequestState<SetupStatus> | undefined, () => void] {
  const [attempt, setAttempt] = useState(0);
  const state = useRequest(uid ? { key: `${uid}#${attempt}`, load: () => fetchSetup(uid) } : undefined);
  const recheck = useCallback(() => setAttempt((n) => n + 1), []);
  return [state, recheck];
}
