import { useEffect, useRef, useState } from 'react';

export type RequestState<T> = { kind: 'loading' } | { kind: 'loaded'; value: T } | { kind: 'failed'; error: unknown };

/** One request: `key` names everything `load` asks (the data source, the parameters, the attempt). */
export interface Request<T> {
  key: string;
  load: () => Promise<T>;
}

/**
 * Runs the request each time its key changes and answers where it stands; undefined while there
 * is nothing to ask. Each answer is tagged with the key it was asked for, so a late answer to an
 * earlier request is never shown as the current one.
 */
export function useRequest<T>(request: Request<T> | undefined): RequestState<T> | undefined {
  const [result, setResult] = useState<{ key: string; state: RequestState<T> }>();
  const key = request?.key;
  // The load of the render that changed the key runs; it is the one that key names.
  const load = useRef(request?.load);
  useEffect(() => {
    load.current = request?.load;
  });

  useEffect(() => {
    const run = load.current;
    if (key === undefined || !run) {
      return;
    }
    let current = true;
    run().then(
      (value) => current && setResult({ key, state: { kind: 'loaded', value } }),
      (error: unknown) => current && setResult({ key, state: { kind: 'failed', error } })
    );
    return () => {
      current = false;
    };
  }, [key]);

  if (key === undefined) {
    return undefined;
  }
  return result?.key === key ? result.state : { kind: 'loading' };
}
