// The building blocks of the OpenAPI schemas (Swagger 2.0 form) of Panoptes's own kinds
// (cluster-schema.ts, mcs-schema.ts): the object and list metadata definitions, which come
// from the captured kube-apiserver 1.28 document (apiserver/reference/openapi-meta.json), and
// helpers for fields.
import { readFileSync } from 'node:fs';
import type { JsonObject } from '../../kube/openapi-convert.ts';

const meta = JSON.parse(readFileSync(new URL('../reference/openapi-meta.json', import.meta.url), 'utf8')) as { definitions: Record<string, JsonObject> };

/** ObjectMeta, ListMeta, WatchEvent and the definitions they refer to (v2 form). */
export const metaDefinitions: Record<string, JsonObject> = meta.definitions;

export const objectMetaName = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
export const listMetaName = 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta';
export const watchEventName = 'io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent';

/** The prefix of Panoptes's definition names. */
export const p = 'io.panoptes.v1alpha1.';
export const ref = (name: string, description: string) => ({ $ref: `#/definitions/${name}`, description });
export const str = (description: string, extra: JsonObject = {}) => ({ type: 'string', description, ...extra });
export const time = (description: string) => str(description, { format: 'date-time' });
export const int = (description: string, extra: JsonObject = {}) => ({ type: 'integer', format: 'int64', description, ...extra });
export const bool = (description: string) => ({ type: 'boolean', description });
export const strings = (description: string) => ({ type: 'array', description, items: { type: 'string' } });
export const list = (name: string, description: string) => ({ type: 'array', description, items: { $ref: `#/definitions/${p}${name}` } });
export const typeMeta = {
  apiVersion: str('APIVersion defines the versioned schema of this representation of an object: panoptes.io/v1alpha1.'),
  kind: str('Kind is a string value representing the REST resource this object represents.'),
};
export const gvk = (kind: string) => [{ group: 'panoptes.io', kind, version: 'v1alpha1' }];

/** The definition of a kind's list (`<Kind>List`: items and list metadata). */
export function listDefinition(kind: string, items: string): JsonObject {
  return {
    description: `${kind}List is a list of ${kind}.`,
    type: 'object',
    required: ['items'],
    properties: {
      ...typeMeta,
      items: list(kind, items),
      metadata: ref(listMetaName, 'Standard list metadata.'),
    },
    'x-kubernetes-group-version-kind': gvk(`${kind}List`),
  };
}

/** The definition of a condition (type, status, reason, message, lastTransitionTime, and `extra` fields). */
export function conditionDefinition(description: string, types: string, extra: JsonObject = {}): JsonObject {
  return {
    description,
    type: 'object',
    required: ['type', 'status'],
    properties: {
      type: str(types),
      status: str('True, False or Unknown.', { enum: ['True', 'False', 'Unknown'] }),
      reason: str('Machine-readable reason.'),
      message: str('Human-readable details.'),
      lastTransitionTime: time('When the condition last changed.'),
      ...extra,
    },
  };
}
