// The strategy of each writable kind of panoptes.io, by resource.
import { clusterKind } from './cluster-object.ts';
import { clusterSourceKind } from './cluster-source-object.ts';
import { mcsKind } from './mcs-object.ts';
import type { AnyOwnKind } from './own-object.ts';

const kinds: Record<string, AnyOwnKind> = {
  [clusterKind.info.resource]: clusterKind,
  [mcsKind.info.resource]: mcsKind,
  [clusterSourceKind.info.resource]: clusterSourceKind,
};

/** The strategy of an own resource (one of panoptes-group.ts ownInfos). */
export function ownKind(resource: string): AnyOwnKind {
  const k = kinds[resource];
  if (!k) throw new Error(`no strategy for the own resource ${resource}`);
  return k;
}
