import { checkForm, formFromSearch, TriageForm } from './form';

const blank: TriageForm = { model: '', version: '', instance: '', node: '', gpu: '', from: '', to: '' };
// Half a second past a whole second: the resource reads whole seconds.
const now = new Date('2026-11-23T04:10:00.500Z');

describe('Triage form', () => {
  test('relative times are read against one now: the default window is exactly 15 minutes', () => {
    const got = checkForm({ ...blank, model: 'recsys-ranker' }, now);
    expect(got).toEqual({
      ok: true,
      request: {
        model: 'recsys-ranker',
        version: undefined,
        instance: undefined,
        node: undefined,
        gpu: undefined,
        from: '2026-11-23T03:55:00Z',
        to: '2026-11-23T04:10:00Z',
      },
    });
  });

  test("an alert link's epoch milliseconds are shown as RFC 3339 and sent as written", () => {
    const form = formFromSearch(new URLSearchParams('node=node-a&gpu=6&from=1795234800000&to=1795235700000'));
    expect(form.from).toBe('2026-11-21T04:20:00Z');
    const got = checkForm(form, now);
    expect(got.ok && got.request).toMatchObject({
      node: 'node-a',
      gpu: '6',
      from: form.from,
      to: '2026-11-21T04:35:00Z',
    });
  });

  test.each<[Partial<TriageForm>, keyof TriageForm, RegExp]>([
    [{}, 'model', /name the model to triage, or a node/],
    [{ model: 'm', from: 'yesterday' }, 'from', /"yesterday" is not a time/],
    [{ model: 'm', from: 'now', to: 'now-15m' }, 'to', /must be after from \(2026-11-23T04:10:00Z\)/],
    [{ node: 'node-a', version: 'v1' }, 'version', /needs a model/],
    [{ model: 'm', gpu: '3' }, 'gpu', /name the node the GPU is on/],
  ])('%p is refused on %s', (fields, field, message) => {
    const got = checkForm({ ...blank, ...fields }, now);
    expect(got.ok).toBe(false);
    expect(!got.ok && got.errors[field]).toMatch(message);
  });
});
