// The content of an object as its member holds it, from the object as Panoptes serves it:
// what storage adds (the served resourceVersion, the panoptes.io/cluster and
// panoptes.io/upstream-resource-version annotations) taken off, metadata's keys sorted
// (storage rewrites metadata; everything else keeps the member's key order), at any depth.
import { stringifyJson } from '../../kube/json-text.ts';
import type { KubeObject } from '../../storage/types.ts';

const sortKeys = (x: unknown): unknown => {
  if (Array.isArray(x)) return x.map(sortKeys);
  if (x === null || typeof x !== 'object') return x;
  return Object.fromEntries(Object.keys(x).sort().map((k) => [k, sortKeys((x as Record<string, unknown>)[k])]));
};

/** The member's object as comparable text. */
export function memberContent(o: KubeObject): string {
  return stringifyJson({ ...o, metadata: sortKeys(o.metadata) });
}

/** The served object (its JSON text) as the member's comparable text. */
export function servedContent(served: string): string {
  const o = JSON.parse(served) as KubeObject;
  const md = { ...o.metadata! };
  md.resourceVersion = md.annotations?.['panoptes.io/upstream-resource-version'];
  const annotations = { ...md.annotations };
  delete annotations['panoptes.io/cluster'];
  delete annotations['panoptes.io/upstream-resource-version'];
  if (Object.keys(annotations).length) md.annotations = annotations;
  else delete md.annotations;
  return memberContent({ ...o, metadata: md });
}
