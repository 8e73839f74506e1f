// Hostile request bodies: PATCH bodies that amplify (JSON patch copies, large values, deep
// nesting, long pointers, many operations) and POST bodies that nest or expand (deep JSON and
// YAML, YAML aliases). Each names the answer Panoptes gives when it is sent to a Cluster
// object (kube-apiserver's answer where kube has one): a 4xx Status, never a 500, and never
// a process that stops answering. Shared by the write API's tests and the hostile-data suite.
//
// Every patch applies to any JSON object: it works below the top-level keys `x`, `y`, `z`
// (unknown fields of a Cluster, dropped with a warning when the patch succeeds).

export type BombContentType = 'application/json-patch+json' | 'application/merge-patch+json' | 'application/json' | 'application/yaml';

export interface Bomb {
  name: string;
  contentType: BombContentType;
  body: string;
  /** The answer: HTTP code and Status reason ('' for a success). */
  expect: { code: number; reason: string };
}

const MiB = 1024 * 1024;
const op = (o: Record<string, unknown>) => JSON.stringify(o);
const jsonPatch = (ops: string[]) => `[${ops.join(',')}]`;
const invalid = { code: 422, reason: 'Invalid' };
const tooLarge = { code: 413, reason: 'RequestEntityTooLarge' };
const badRequest = { code: 400, reason: 'BadRequest' };
const ok = { code: 200, reason: '' };

/** A JSON value nested `depth` levels deep: objects `{"a":…}` or arrays `[…]`. */
export const deepJson = (depth: number, kind: 'object' | 'array' = 'object', leaf = '1'): string =>
  kind === 'object' ? '{"a":'.repeat(depth) + leaf + '}'.repeat(depth) : '['.repeat(depth) + leaf + ']'.repeat(depth);

/** PATCH bodies for an existing object. */
export function patchBombs(): Bomb[] {
  const JP = 'application/json-patch+json' as const;
  const MP = 'application/merge-patch+json' as const;
  const bombs: Bomb[] = [];

  // The reported one: 18 operations in 855 bytes built 14 MB; ~30 exhaust the heap.
  bombs.push({
    name: 'copy doubling a value into itself (the 855-byte bomb)',
    contentType: JP,
    body: jsonPatch([op({ op: 'add', path: '/x', value: ['x'.repeat(40)] }), ...Array.from({ length: 40 }, () => op({ op: 'copy', from: '/x', path: '/x/-' }))]),
    expect: invalid,
  });
  bombs.push({
    name: 'copy of the whole document into itself',
    contentType: JP,
    body: jsonPatch([op({ op: 'add', path: '/x', value: 'x'.repeat(1000) }), ...Array.from({ length: 40 }, (_, i) => op({ op: 'copy', from: '', path: `/y${i}` }))]),
    expect: invalid,
  });
  bombs.push({
    name: 'copy fan-out of a 100 KB value',
    contentType: JP,
    body: jsonPatch([op({ op: 'add', path: '/x', value: 'a'.repeat(100_000) }), ...Array.from({ length: 200 }, (_, i) => op({ op: 'copy', from: '/x', path: `/y${i}` }))]),
    expect: invalid,
  });
  // Each copy nests the value below its own innermost object: the depth doubles (40, 80, 160, ...)
  // while the size stays small (within the copy budget); the result is too deep.
  {
    const ops = [op({ op: 'add', path: '/x', value: JSON.parse(deepJson(40, 'object', '{}')) })];
    let inner = '/x' + '/a'.repeat(40);
    for (let i = 0; i < 8; i++) {
      ops.push(op({ op: 'copy', from: '/x', path: `${inner}/b` }));
      inner = `${inner}/b${inner.slice(2)}`;
    }
    bombs.push({ name: 'nested copies doubling the depth', contentType: JP, body: jsonPatch(ops), expect: invalid });
  }
  bombs.push({
    name: 'a near-limit value added, then copied twice (the result is too large)',
    contentType: JP,
    body: jsonPatch([op({ op: 'add', path: '/x', value: 'a'.repeat(1.2 * MiB) }), op({ op: 'copy', from: '/x', path: '/y' }), op({ op: 'copy', from: '/x', path: '/z' })]),
    expect: tooLarge,
  });
  bombs.push({
    name: 'a near-limit value added three times (the body is too large)',
    contentType: JP,
    body: jsonPatch(['x', 'y', 'z'].map((k) => op({ op: 'add', path: `/${k}`, value: 'a'.repeat(1.1 * MiB) }))),
    expect: tooLarge,
  });
  bombs.push({
    name: 'replace with a near-limit value, three times',
    contentType: JP,
    body: jsonPatch([op({ op: 'add', path: '/x', value: 0 }), ...[1, 2, 3].map(() => op({ op: 'replace', path: '/x', value: 'a'.repeat(0.9 * MiB) }))]),
    expect: ok,
  });
  bombs.push({
    name: 'move ping-pong of a large value',
    contentType: JP,
    body: jsonPatch([
      op({ op: 'add', path: '/x', value: Array.from({ length: 20_000 }, (_, i) => `v${i}`) }),
      ...Array.from({ length: 9_998 }, (_, i) => op({ op: 'move', from: i % 2 ? '/y' : '/x', path: i % 2 ? '/x' : '/y' })),
    ]),
    expect: ok,
  });
  // Each insert or removal at the front shifts the whole array: 10^10 element moves.
  bombs.push({
    name: 'inserts at the front of a million-element array',
    contentType: JP,
    body: jsonPatch([op({ op: 'add', path: '/x', value: new Array(1_200_000).fill(0) }), ...Array.from({ length: 9_998 }, () => op({ op: 'add', path: '/x/0', value: 1 }))]),
    expect: invalid,
  });
  bombs.push({
    name: 'moves from the front of a million-element array',
    contentType: JP,
    body: jsonPatch([op({ op: 'add', path: '/x', value: new Array(1_200_000).fill(0) }), ...Array.from({ length: 9_998 }, () => op({ op: 'move', from: '/x/0', path: '/x/-' }))]),
    expect: invalid,
  });
  bombs.push({
    name: 'appends to a large array',
    contentType: JP,
    body: jsonPatch([op({ op: 'add', path: '/x', value: new Array(200_000).fill(0) }), ...Array.from({ length: 9_998 }, () => op({ op: 'add', path: '/x/-', value: 1 }))]),
    expect: ok,
  });
  bombs.push({
    name: 'tests of a large value',
    contentType: JP,
    body: jsonPatch([
      op({ op: 'add', path: '/x', value: new Array(300_000).fill(7) }),
      ...Array.from({ length: 3 }, () => op({ op: 'test', path: '/x', value: [...new Array(299_999).fill(7), 8] })),
    ]),
    expect: invalid,
  });
  bombs.push({
    name: 'a value nested 100,000 deep',
    contentType: JP,
    body: `[{"op":"add","path":"/x","value":${deepJson(100_000)}}]`,
    expect: badRequest,
  });
  bombs.push({
    name: 'a value nested 100,000 deep in arrays',
    contentType: JP,
    body: `[{"op":"add","path":"/x","value":${deepJson(100_000, 'array')}}]`,
    expect: badRequest,
  });
  bombs.push({
    name: 'a pointer of a million tokens',
    contentType: JP,
    body: jsonPatch([op({ op: 'add', path: '/x'.repeat(1_000_000), value: 1 })]),
    expect: invalid,
  });
  bombs.push({
    name: 'moves into ever deeper paths',
    contentType: JP,
    body: jsonPatch([
      op({ op: 'add', path: '/x', value: JSON.parse(deepJson(400, 'object', '{}')) }),
      op({ op: 'add', path: '/y', value: JSON.parse(deepJson(400, 'object', '{}')) }),
      op({ op: 'move', from: '/y', path: `/x${'/a'.repeat(400)}/y` }),
    ]),
    expect: invalid,
  });
  bombs.push({
    name: '10,001 operations',
    contentType: JP,
    body: jsonPatch(Array.from({ length: 10_001 }, () => op({ op: 'test', path: '/metadata', value: null }))),
    expect: tooLarge,
  });

  bombs.push({ name: 'merge patch nested 100,000 deep', contentType: MP, body: `{"x":${deepJson(100_000)}}`, expect: badRequest });
  bombs.push({ name: 'merge patch (array) nested 100,000 deep', contentType: MP, body: deepJson(100_000, 'array'), expect: badRequest });
  bombs.push({ name: 'merge patch nested just past the depth limit', contentType: MP, body: `{"x":${deepJson(600)}}`, expect: badRequest });
  bombs.push({ name: 'merge patch larger than the body limit', contentType: MP, body: JSON.stringify({ x: 'a'.repeat(3.1 * MiB) }), expect: tooLarge });
  bombs.push({ name: 'merge patch of many deep nulls', contentType: MP, body: JSON.stringify({ x: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, JSON.parse(deepJson(100, 'object', 'null'))])) }), expect: ok });
  return bombs;
}

/** POST bodies that create an object (a Cluster, here): nesting and expansion. */
export function bodyBombs(): Bomb[] {
  const cluster = (extra: string) => `{"apiVersion":"panoptes.io/v1alpha1","kind":"Cluster","metadata":{"name":"bomb"},"spec":{"server":"https://bomb.example"},"x":${extra}}`;
  let laughs = 'apiVersion: panoptes.io/v1alpha1\nkind: Cluster\nmetadata: {name: laughs}\nspec: {server: "https://laughs.example"}\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n';
  for (let i = 1; i < 9; i++) laughs += `${'abcdefghi'[i]}: &${'abcdefghi'[i]} [${Array(9).fill(`*${'abcdefghi'[i - 1]}`).join(',')}]\n`;
  return [
    { name: 'JSON nested 100,000 deep', contentType: 'application/json', body: cluster(deepJson(100_000)), expect: badRequest },
    { name: 'JSON nested 8,000 deep in arrays', contentType: 'application/json', body: cluster(deepJson(8_000, 'array')), expect: badRequest },
    { name: 'JSON with a string full of brackets (not nesting)', contentType: 'application/json', body: cluster(JSON.stringify('['.repeat(100_000))), expect: { code: 201, reason: '' } },
    { name: 'JSON larger than the body limit', contentType: 'application/json', body: cluster(JSON.stringify('a'.repeat(3.1 * MiB))), expect: tooLarge },
    { name: 'YAML billion laughs', contentType: 'application/yaml', body: laughs, expect: badRequest },
    { name: 'YAML nested 60,000 deep (flow)', contentType: 'application/yaml', body: `metadata: {name: deep}\nx: ${'['.repeat(60_000)}${']'.repeat(60_000)}\n`, expect: badRequest },
    { name: 'YAML nested 50,000 deep (block)', contentType: 'application/yaml', body: `metadata: {name: deep}\nx:\n  ${'- '.repeat(50_000)}x\n`, expect: badRequest },
    { name: 'YAML of 60,000 keys', contentType: 'application/yaml', body: `metadata: {name: keys}\nx:\n${Array.from({ length: 60_000 }, (_, i) => `  k${i}: v${i}`).join('\n')}\n`, expect: tooLarge },
  ];
}
