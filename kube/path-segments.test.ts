// The one path-segment rule: what it lets through (kube's names, Unicode names, `:`), what it
// refuses (every traversal spelling of hack/testing/path-traversal.ts), and the encoding back.
import t from 'tap';
import { traversalSpellings } from '../hack/testing/path-traversal.ts';
import { encodePath, pathSegmentProblem, pathSegments, resourceNamesProblem } from './path-segments.ts';
import { StatusError } from './status.ts';

const codeOf = (f: () => unknown): number => {
  try {
    f();
    return 0;
  } catch (e) {
    return (e as StatusError).code;
  }
};

t.test('names kube serves pass, encoded once on the way out', async (t) => {
  const names = ['default', 'system:controller:job-controller', 'astral-\u{1F600}-name', 'my.config', '...', 'a b', 'user@example.com', 'x+y=z'];
  for (const n of names) t.equal(pathSegmentProblem(n), undefined, n);
  t.same(pathSegments('/api/v1/namespaces/default/configmaps/system:x'), ['api', 'v1', 'namespaces', 'default', 'configmaps', 'system:x']);
  t.same(pathSegments('/apis/g/v1/widgets/astral-%F0%9F%98%80-name'), ['apis', 'g', 'v1', 'widgets', 'astral-\u{1F600}-name']);
  t.equal(encodePath(['api', 'v1', 'namespaces', 'a b', 'x', 'system:x@y']), '/api/v1/namespaces/a%20b/x/system:x@y');
  t.equal(encodePath(['apis', 'g', 'v1', 'astral-\u{1F600}-name']), '/apis/g/v1/astral-%F0%9F%98%80-name');
  t.same(pathSegments(encodePath(names)), names, 'what is encoded reads back the same');
  t.same(pathSegments('/'), []);
});

t.test('every traversal spelling is refused, as a segment and once decoded', async (t) => {
  for (const s of traversalSpellings) {
    const code = codeOf(() => pathSegments(`/api/v1/namespaces/${s.segment}/pods`));
    t.equal(code, s.segment === '' ? 404 : 400, `${s.name}: ${code}`);
  }
  t.match(codeOf(() => encodePath(['api', '..'])), 400, 'a segment is checked again when a path is built');
  t.equal(pathSegmentProblem('..'), "may not be '..'", "kube's words");
  t.equal(pathSegmentProblem('a%b'), "may not contain '%'");
  t.equal(pathSegmentProblem('a\\b'), "may not contain '\\'");
  t.equal(pathSegmentProblem('\uff0e\uff0e'), "may not be '..' (or characters read as it)");
  t.equal(pathSegmentProblem('\u3002'), "may not be '.' (or characters read as it)");
  t.equal(pathSegmentProblem('a\uff0fb'), "may not contain '/' (or characters read as it)");
  t.match(pathSegmentProblem('a\u0000'), /control characters/);
  t.match(pathSegmentProblem('a\ud800'), /lone surrogates/);
  t.equal(pathSegmentProblem('\u{1F600}'), undefined, 'a pair is one character');
});

t.test('what a resource path names: a namespace is a DNS-1123 label, a pod a DNS-1123 subdomain', async (t) => {
  t.equal(resourceNamesProblem({ namespace: 'shop', name: 'Web_1' }), undefined, 'a name is the member\'s to judge');
  t.match(resourceNamesProblem({ namespace: 'Shop' }), /^invalid namespace "Shop": a lowercase RFC 1123 label/);
  t.match(resourceNamesProblem({ namespace: 'shop', name: 'p_1' }, 'pod'), /^invalid pod name "p_1": a lowercase RFC 1123 subdomain/);
  t.equal(resourceNamesProblem({ namespace: 'shop', name: 'web-1.a' }, 'pod'), undefined);
});
