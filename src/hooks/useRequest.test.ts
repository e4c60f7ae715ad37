import { act, renderHook } from '@testing-library/react';

import { Request, useRequest } from './useRequest';

/** A promise the test settles by hand. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('useRequest', () => {
  test('nothing to ask: undefined, and nothing runs', () => {
    const { result } = renderHook(() => useRequest<number>(undefined));
    expect(result.current).toBeUndefined();
  });

  test('loading, then the answer', async () => {
    const answer = deferred<number>();
    const { result } = renderHook(() => useRequest({ key: 'a', load: () => answer.promise }));
    expect(result.current).toEqual({ kind: 'loading' });
    await act(async () => answer.resolve(42));
    expect(result.current).toEqual({ kind: 'loaded', value: 42 });
  });

  test('a failure keeps what was thrown', async () => {
    const answer = deferred<number>();
    const { result } = renderHook(() => useRequest({ key: 'a', load: () => answer.promise }));
    const err = new Error('HTTP 502');
    await act(async () => answer.reject(err));
    expect(result.current).toEqual({ kind: 'failed', error: err });
  });

  test('runs once per key, and a late answer to an earlier key is never shown', async () => {
    const answers: Record<string, ReturnType<typeof deferred<string>>> = { a: deferred(), b: deferred() };
    const asked: string[] = [];
    const request = (key: string): Request<string> => ({
      key,
      load: () => {
        asked.push(key);
        return answers[key].promise;
      },
    });
    const { result, rerender } = renderHook(({ key }) => useRequest(request(key)), { initialProps: { key: 'a' } });
    rerender({ key: 'a' });
    expect(asked).toEqual(['a']);

    rerender({ key: 'b' });
    expect(asked).toEqual(['a', 'b']);
    await act(async () => answers.a.resolve('answer to a'));
    expect(result.current).toEqual({ kind: 'loading' });

    await act(async () => answers.b.resolve('answer to b'));
    expect(result.current).toEqual({ kind: 'loaded', value: 'answer to b' });
  });

  test('no request after one: undefined again', async () => {
    const answer = deferred<number>();
    const { result, rerender } = renderHook(
      ({ on }) => useRequest(on ? { key: 'a', load: () => answer.promise } : undefined),
      { initialProps: { on: true } }
    );
    await act(async () => answer.resolve(1));
    rerender({ on: false });
    expect(result.current).toBeUndefined();
  });
});
