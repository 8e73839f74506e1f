// The OpenAPI schemas (Swagger 2.0 form) of the CollectionResource kind and its list
// (panoptes.io/v1alpha1, cluster-scoped, read-only; apiserver/collections/), the shape of
// Clusterpedia's clusterpedia.io/v1beta1 CollectionResource: the kinds it reads and, from a
// get, one page of their objects with the continue key of the next.
import type { JsonObject } from '../../kube/openapi-convert.ts';
import { bool, gvk, int, list, listDefinition, objectMetaName, p, ref, str, typeMeta } from './own-schema.ts';

export const collectionDefinitions: Record<string, JsonObject> = {
  [`${p}CollectionResource`]: {
    description:
      'CollectionResource is one list of several kinds (workloads, any, or one the operator declares): a get answers one page of their objects, every kind merged in one order (namespace, name, cluster, then kind) at one resourceVersion; limit and continue page through it, selectors and search parameters apply to every kind.',
    type: 'object',
    required: ['resourceTypes'],
    properties: {
      ...typeMeta,
      metadata: ref(objectMetaName, 'name: the collection; resourceVersion: the snapshot every page is read at.'),
      resourceTypes: list('CollectionResourceType', 'The kinds the collection reads (those the member clusters sync).'),
      items: { type: 'array', description: 'The objects of this page, each as its kind serves it (apiVersion, kind, metadata, ...).', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      continue: str('The key of the next page (the continue parameter); absent on the last page.'),
      remainingItemCount: int('Objects after this page, when counted (not with selectors or bare kinds).'),
    },
    'x-kubernetes-group-version-kind': gvk('CollectionResource'),
  },
  [`${p}CollectionResourceList`]: listDefinition('CollectionResource', 'The collections served, with their kinds and without objects.'),
  [`${p}CollectionResourceType`]: {
    description: 'One kind of a collection.',
    type: 'object',
    required: ['group', 'version', 'resource'],
    properties: {
      group: str('The API group ("" for the core group).'),
      version: str('The version it is served at.'),
      kind: str('Its kind.'),
      resource: str('Its plural resource name.'),
      bare: bool('Only its objects without an owner (no metadata.ownerReferences).'),
    },
  },
};
