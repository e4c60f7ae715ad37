import { ResourceRequestError } from '../../api/resource';
import { requestFailure } from './RequestError';

const HINT = 'check Prometheus';

describe('requestFailure', () => {
  test.each([
    [400, 'The data source refused the request', undefined],
    [401, 'Prometheus refused the credentials', 'Check the authentication in the data source settings.'],
    [502, 'Prometheus could not be read', HINT],
    [504, 'Prometheus could not be read', HINT],
    [500, 'The data source did not answer', undefined],
    [undefined, 'The data source did not answer', undefined],
  ])('status %p: %s', (status, title, hint) => {
    expect(requestFailure(new ResourceRequestError('the words', status), HINT)).toEqual({
      title,
      message: 'the words',
      ...(hint && { hint }),
    });
  });

  test('an error that is not a resource error did not get an answer', () => {
    expect(requestFailure(new TypeError('Failed to fetch'), HINT)).toEqual({
      title: 'The data source did not answer',
      message: 'Failed to fetch',
    });
  });
});
