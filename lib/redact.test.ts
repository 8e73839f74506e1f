// The one redactor: values registered where they are handled (process-wide, or for one
// request), and credential structure (PEM keys, Bearer, JWTs, credential-named keys in
// JSON, escaped JSON, YAML and query strings, V8's JSON error snippets), the rest of the
// text left readable.
import t from 'tap';
import { bestTimes } from '../hack/scaling.ts';
import { redact, redactDeep, redactedText, rememberSecrets, secretValuesIn, withSecrets } from './redact.ts';

const R = redactedText;

t.test('credential structure', async (t) => {
  const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----';
  const cases: Array<[string, string]> = [
    [`key: ${pem} end`, `key: ${R} end`],
    ['-----BEGIN PRIVATE KEY-----\nMIIEow (truncated', R],
    [`data ${Buffer.from(pem).toString('base64')} more`, `data ${R} more`],
    ['Authorization: Bearer abc.def-ghi', `Authorization: Bearer ${R}`],
    ['token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl here', `token ${R} here`],
    ['{"token":"s3cr3t-value","server":"https://x"}', `{"token":"${R}","server":"https://x"}`],
    ['{"credentials": "plain-string-creds"}', `{"credentials": "${R}"}`],
    ['{\\"clientKeyData\\":\\"QUJDREVGRw==\\",\\"x\\":1}', `{\\"clientKeyData\\":\\"${R}\\",\\"x\\":1}`],
    ['users:\n- user:\n    client-key-data: QUJDREVGRw==\n    token: abcdefgh\n', `users:\n- user:\n    client-key-data: ${R}\n    token: ${R}\n`],
    ['GET /x?access_token=abcdef&limit=1', `GET /x?access_token=${R}&limit=1`],
    ['password=hunter22 user=me', `password=${R} user=me`],
    ['client_secret: abcdefgh', `client_secret: ${R}`],
    ['https://admin:pa55word@example.com/', `https://${R}@example.com/`],
    [`Unexpected token 'S', "{"a":SECRETTOKEN}" is not valid JSON`, `Unexpected token 'S', (the input) is not valid JSON`],
    ['{"token":"truncated-secre', `{"token":"${R}`],
    [`Unexpected token 'x', "xxxxx{yyyy"... is not valid JSON`, `Unexpected token 'x', (the input) is not valid JSON`],
    [`Unexpected token 'x', ..."yy x yyyyy"... is not valid JSON`, `Unexpected token 'x', (the input) is not valid JSON`],
  ];
  for (const [input, want] of cases) t.equal(redact(input), want, input);

  // What must stay readable.
  for (const keep of [
    'spec.credentials.token: Invalid value: "(hidden)": must be a bearer token',
    'unknown field "spec.credentials.tokn"',
    'the continue token in this response is too old',
    '{"secretRef":{"name":"east-credentials"},"tokenFile":"/var/run/token"}',
    'certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=',
    'HTTP 403 Forbidden',
    '{"credentials":{"source":"Secret","secret":"panoptes/east-credentials","kinds":["token"]}}',
    'Basic auth and bearer tokens are not shown',
  ]) {
    t.equal(redact(keep), keep, keep);
  }
});

t.test('registered values: process-wide and per request', async (t) => {
  const token = 'planted-Token-0123456789';
  t.equal(redact(`x ${token} y`), `x ${token} y`, 'unknown until registered');
  withSecrets([token], () => {
    t.equal(redact(`x ${token} y`), `x ${R} y`, 'inside the request');
  });
  withSecrets(['tok/with+chars'], () => {
    t.equal(redact(`q=${encodeURIComponent('tok/with+chars')}&x`), `q=${R}&x`, 'also URL-encoded');
  });
  t.equal(redact(`x ${token} y`), `x ${token} y`, 'forgotten after the request');
  rememberSecrets(token, 'short');
  t.equal(redact(`x ${token} y ${Buffer.from(token).toString('base64')}`), `x ${R} y ${R}`, 'remembered, also base64');
  t.equal(redact('a short word'), 'a short word', 'values too short to be matched safely are not');
  await new Promise((r) => setTimeout(r, 1));
  t.equal(redact(token), R, 'across async boundaries');
});

t.test('redactDeep: strings everywhere, credential-named keys wholesale', async (t) => {
  const out = redactDeep({ msg: 'Bearer abcdefgh', nested: [{ token: 'x' }, { clientKeyData: 'y' }], n: 1, err: Object.assign(new Error('Bearer zzzzzzzz'), { code: 'E1' }) });
  t.same(out, { msg: `Bearer ${R}`, nested: [{ token: R }, { clientKeyData: R }], n: 1, err: { name: 'Error', message: `Bearer ${R}`, code: 'E1' } });
});

t.test('secretValuesIn: the credentials a request carries, also in last-applied', async (t) => {
  const lastApplied = JSON.stringify({ spec: { credentials: { token: 'from-annotation' } } });
  const doc = { metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': lastApplied } }, spec: { server: 'https://x', credentials: { token: 'tok-1', clientKeyData: 'key-1' } } };
  t.same(secretValuesIn(doc).sort(), ['from-annotation', 'key-1', 'tok-1']);
  t.same(secretValuesIn({ spec: { credentials: 'a-string' } }), ['a-string']);
  t.same(secretValuesIn([{ op: 'add', path: '/spec/credentials/token', value: 'from-a-json-patch' }, { op: 'add', path: '/spec/credentials', value: { clientKeyData: 'k' } }]), ['from-a-json-patch', 'k']);
});

t.test('the cost of a redaction grows with the text, not with the values known', async (t) => {
  // Before any test below remembers values process-wide (they would add to both sides).
  // Measured against itself in the same run, not against a clock: interleaved, the best of a few
  // runs each. One pass over the text costs the same for 1,000 values as for 16,000 (a scan per
  // value costs 16 times more), and 4 times the text costs about 4 times more (quadratic: 16).
  const values = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `request-${tag}-token-${i.toString(36).padStart(6, '0')}`);
  const text = (items: number, secret: string) => JSON.stringify({ items: Array.from({ length: items }, (_, i) => ({ name: `n${i}`, list: ['a', 'b', 'c'] })) }) + secret;
  const few = values(1000, 'few');
  const lots = values(16_000, 'lots');
  const small = text(4_000, few[999]);
  const large = text(16_000, few[999]);
  /** The time of redact(text) alone, within a request's scope of `secrets` (set up beforehand). */
  const timeOf = (secrets: string[], text: string) => () =>
    withSecrets(secrets, () => {
      const started = performance.now();
      const out = redact(text);
      const ms = performance.now() - started;
      if (out.includes(few[999])) throw new Error('a value not redacted');
      return ms;
    });
  const [withFew, withLots, ofSmall, ofLarge] = bestTimes([timeOf(few, large), timeOf([...lots, few[999]], large), timeOf(few, small), timeOf(few, large)]);
  t.ok(withLots / withFew < 4, `16 times the values: ${(withLots / withFew).toFixed(1)} times the cost (${withFew.toFixed(1)} vs ${withLots.toFixed(1)} ms)`);
  t.ok(ofLarge / ofSmall < 10, `4 times the text: ${(ofLarge / ofSmall).toFixed(1)} times the cost (${ofSmall.toFixed(1)} vs ${ofLarge.toFixed(1)} ms)`);
});

t.test('large texts and many values: one pass', async (t) => {
  const many = Array.from({ length: 5000 }, (_, i) => `cluster-token-${i.toString(36).padStart(6, '0')}-XYZ`);
  rememberSecrets(...many);
  const big = JSON.stringify({ items: Array.from({ length: 20_000 }, (_, i) => ({ name: `n${i}`, list: ['a', 'b', 'c'] })) }) + many[4321];
  const out = redact(big);
  t.ok(out.endsWith(R) && !out.includes(many[4321]), 'the value at the end found');
  t.equal(redact(`x ${many[17]} y`), `x ${R} y`);
});
