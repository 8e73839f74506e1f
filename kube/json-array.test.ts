import t from 'tap';
import { jsonArrayBytes, jsonArrayString, type JsonArrayText } from './json-array.ts';

t.test('the bytes are the UTF-8 encoding of the joined text, whatever the elements hold', async (t) => {
  const hostile = [
    '{"a":1}',
    '{"name":"caf\u00e9 \u4e2d\u6587 \ud83d\ude80"}',
    '{"nul":"a\\u0000b"}',
    '"raw \u0000 byte"', // not valid JSON: the encoding must not care
    '"\ud800"', // a lone surrogate: encoded as U+FFFD, as Buffer.from encodes it
    '"' + 'x'.repeat(70_000) + '"',
    '[]',
  ];
  const docs: JsonArrayText[] = [
    { head: '{"items":[', items: [], tail: ']}' },
    { head: '{"items":[', items: ['1'], tail: ']}' },
    { head: '{"kind":"Table","metadata":{"continue":"\u00e9"},"rows":[', items: hostile, tail: ']}' },
    { head: '', items: hostile, tail: '' },
  ];
  for (const d of docs) {
    const bytes = jsonArrayBytes(d);
    t.same(bytes, Buffer.from(jsonArrayString(d)), `${d.items.length} items`);
  }
  t.same(JSON.parse(jsonArrayBytes({ ...docs[2], items: [hostile[0], hostile[1], hostile[2]] }).toString('utf8')), { kind: 'Table', metadata: { continue: '\u00e9' }, rows: [{ a: 1 }, { name: 'caf\u00e9 \u4e2d\u6587 \ud83d\ude80' }, { nul: 'a\u0000b' }] });
});
