// Bounded decoding: depth from the text before any parse (Go's words), YAML's aliases, size
// and depth, and the iterative measures, copies and comparisons the patchers use on values
// far deeper than any recursion could walk.
import t from 'tap';
import { deepJson } from '../hack/testing/patch-bombs.ts';
import { checkJsonDepth, cloneJson, decodeJson, decodeYaml, deeperThan, DepthError, jsonBytes, jsonEqual, maxJsonDepth, maxYamlBodyBytes, setOwn } from './json-limits.ts';
import { StatusError } from './status.ts';

t.test('JSON: nesting bounded from the text, as Go words it', async (t) => {
  t.same(decodeJson(deepJson(maxJsonDepth - 1, 'array')), JSON.parse(deepJson(maxJsonDepth - 1, 'array')), `${maxJsonDepth} levels decode`);
  t.doesNotThrow(() => checkJsonDepth(`[${deepJson(maxJsonDepth - 1)}]`));
  t.throws(() => decodeJson(`[${deepJson(maxJsonDepth)}]`), new DepthError("invalid character '{' exceeded max depth"));
  t.throws(() => decodeJson(deepJson(maxJsonDepth + 1, 'array')), new DepthError("invalid character '[' exceeded max depth"));
  t.throws(() => decodeJson(deepJson(1_000_000)), DepthError, 'a million levels: refused from the text, no parse');
  t.same(decodeJson(JSON.stringify({ s: '[[[{{{' .repeat(10_000), t: 'a\\"[[[', u: '\\\\' })), { s: '[[[{{{'.repeat(10_000), t: 'a\\"[[[', u: '\\\\' }, 'brackets in strings (escapes too) do not nest');
  t.throws(() => decodeJson('{"a":'), SyntaxError, 'other errors are JSON.parse\'s');
  t.same(decodeJson('{"a":[1,2]}  '), { a: [1, 2] });
});

t.test('YAML: aliases, size, depth; the value is a tree', async (t) => {
  let laughs = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n';
  for (let i = 1; i < 9; i++) laughs += `${'abcdefghi'[i]}: &${'abcdefghi'[i]} [${Array(9).fill(`*${'abcdefghi'[i - 1]}`).join(',')}]\n`;
  t.throws(() => decodeYaml(laughs), /Excessive alias count/, 'a billion laughs is refused');
  const shared = decodeYaml('a: &x {k: [1, 2]}\nb: *x\n') as { a: { k: number[] }; b: { k: number[] } };
  t.same(shared, { a: { k: [1, 2] }, b: { k: [1, 2] } }, 'an alias is expanded');
  t.not(shared.a, shared.b, 'and copied, not shared');
  const fanout = `a: &x "${'y'.repeat(60_000)}"\nb: [${Array(60).fill('*x').join(', ')}]\n`;
  t.throws(() => decodeYaml(fanout), { name: 'StatusError', reason: 'RequestEntityTooLarge', code: 413 }, 'a value larger than a JSON body may be');
  t.throws(() => decodeYaml(`x: "${'a'.repeat(maxYamlBodyBytes)}"`), new StatusError('RequestEntityTooLarge', `Request entity too large: limit is ${maxYamlBodyBytes}`));
  t.throws(() => decodeYaml(`x: ${'['.repeat(maxJsonDepth + 1)}${']'.repeat(maxJsonDepth + 1)}`), Error, 'too deep (the parser itself, or the depth bound)');
  const atBound = `x: ${'['.repeat(maxJsonDepth - 1)}${']'.repeat(maxJsonDepth - 1)}`;
  let ok: unknown;
  try {
    ok = decodeYaml(atBound);
  } catch (err) {
    ok = err;
  }
  t.notOk(ok instanceof DepthError, `${maxJsonDepth} levels are not refused for depth`);
  t.throws(() => decodeYaml('x:\n' + Array.from({ length: 20 }, (_, i) => `${'  '.repeat(i + 1)}k:`).join('\n'), 10), new DepthError('exceeded max depth of 10'));
  t.same(decodeYaml('a: 1\na: 2\n'), { a: 2 }, 'a repeated key: the last wins, as in JSON');
});

t.test('measures, copies and comparisons need no stack', async (t) => {
  const deep = JSON.parse(deepJson(200_000)) as unknown;
  t.ok(deeperThan(deep, maxJsonDepth));
  t.notOk(deeperThan(JSON.parse(deepJson(maxJsonDepth)), maxJsonDepth));
  t.notOk(deeperThan('x', 0));
  t.ok(deeperThan([], 0));
  const copy = cloneJson(deep);
  t.not(copy, deep);
  t.ok(jsonEqual(copy, deep), 'a copy 200,000 deep equals its original');
  t.equal(jsonBytes(deep), deepJson(200_000).length, 'its size as JSON');
  for (const v of [null, true, 1.5e21, -0, 'é"\\\n\u2028', [1, 'two', { three: [null] }], { 'ke"y': { a: [] }, b: {} }, []]) {
    t.equal(jsonBytes(v), Buffer.byteLength(JSON.stringify(v)), encodeURIComponent(JSON.stringify(v)));
  }
  const big = new Array(1_000_000).fill('0123456789');
  const counted = jsonBytes(big, 1000);
  t.ok(counted > 1000, 'past the budget');
  t.ok(counted < jsonBytes(big), `a budget stops counting early: ${counted} counted, not the ${jsonBytes(big)} of the whole`);
  t.notOk(jsonEqual({ a: [1, 2] }, { a: [1, 2], b: 1 }));
  t.notOk(jsonEqual({ a: [1, 2] }, { a: [2, 1] }));
  t.notOk(jsonEqual([1], { 0: 1 }));
  t.ok(jsonEqual({ a: 1, b: [{}] }, { b: [{}], a: 1 }), 'key order aside');
  const o: Record<string, unknown> = {};
  setOwn(o, '__proto__', { polluted: true });
  t.same(Object.keys(o), ['__proto__'], '"__proto__" is an own key, not the prototype');
  t.equal(Object.getPrototypeOf(o), Object.prototype);
  const parsed = JSON.parse('{"__proto__":{"x":1}}') as Record<string, unknown>;
  t.same(Object.keys(cloneJson(parsed)), ['__proto__'], 'and stays one when copied');
});
