// The strategies of the writable kinds of panoptes.io, by resource: each kind registers its
// strategy (apiserver/kinds.ts, the composition root), as kube-apiserver's kinds give the
// generic registry theirs; the generic write path (own-writes.ts, apiserver/endpoints/routes.ts) reads them here
// and imports no kind.
import type { AnyOwnKind } from './own-object.ts';

const kinds = new Map<string, AnyOwnKind>();

/** Registers the strategy of an own resource (once per resource). */
export function registerOwnKind(kind: AnyOwnKind): void {
  if (kinds.has(kind.info.resource)) throw new Error(`a strategy is already registered for ${kind.info.resource}`);
  kinds.set(kind.info.resource, kind);
}

/** The strategy of an own resource (one of apiserver/discovery/panoptes-group.ts ownInfos). */
export function ownKind(resource: string): AnyOwnKind {
  const k = kinds.get(resource);
  if (!k) throw new Error(`no strategy for the own resource ${resource}`);
  return k;
}
