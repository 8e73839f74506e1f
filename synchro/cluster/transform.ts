// What synchro changes in an object before storing it. Storage itself stamps
// metadata.resourceVersion and the panoptes.io/cluster and panoptes.io/upstream-resource-version
// annotations; synchro drops what is noise for readers and anything that could spoof those two.
import { lastAppliedAnnotation } from '../../kube/annotations.ts';
import type { KubeObject } from '../../storage/types.ts';
import { stampedAnnotations } from '../../storage/write.ts';

/**
 * Prepares an object for storage, in place (objects come fresh from JSON.parse): drops
 * metadata.managedFields and the last-applied-configuration annotation (and any upstream
 * panoptes.io/ stamps), and sets apiVersion and kind, which list items omit.
 */
export function transform(obj: KubeObject, apiVersion: string, kind: string): KubeObject {
  if (obj.apiVersion === undefined) obj.apiVersion = apiVersion;
  if (obj.kind === undefined) obj.kind = kind;
  const md = obj.metadata;
  if (!md) return obj;
  if (md.managedFields !== undefined) delete md.managedFields;
  const ann = md.annotations;
  if (ann) {
    let removed = false;
    if (lastAppliedAnnotation in ann) {
      delete ann[lastAppliedAnnotation];
      removed = true;
    }
    for (const k of stampedAnnotations) {
      if (k in ann) {
        delete ann[k];
        removed = true;
      }
    }
    if (removed && Object.keys(ann).length === 0) delete md.annotations;
  }
  return obj;
}
