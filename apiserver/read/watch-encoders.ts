// The output formats of a watch over HTTP: JSON (the engine's jsonEncoder), Table (the read
// path's renderer, one row per event; only the first event's Table carries
// columnDefinitions) and PartialObjectMetadata. Each encoder's id names everything its bytes
// depend on, since the engine caches an event's bytes per encoder id and shares them between
// watchers.
import { createHash } from 'node:crypto';
import type { KubeObject } from '../../storage/types.ts';
import type { ResourceRequest } from '../endpoints/request.ts';
import { toPartialObjectMetadata } from '../../kube/table.ts';
import { tableJson, tableRenderer, tableRowJson } from './table.ts';
import { jsonEncoder, type EncodableEvent, type Encoder } from '../watch/index.ts';

const line = (type: string, objectJson: string): Buffer => Buffer.from(`{"type":"${type}","object":${objectJson}}\n`, 'utf8');

/** Table events: one row per object event; a BOOKMARK is a Table without rows at its rv; ERROR passes through. */
function tableEncoder(req: ResourceRequest, withColumns: boolean): Encoder {
  const renderer = tableRenderer(req.info, req.view);
  const out = req.output;
  const shape = createHash('sha1')
    .update(JSON.stringify([req.info.group, req.info.resource, req.info.version, req.view.cluster === undefined, renderer.columns, req.info.printerColumns ?? null]))
    .digest('base64url')
    .slice(0, 16);
  return {
    id: `table;${out.metaVersion};${out.includeObject};${withColumns ? 'columns' : 'rows'};${shape}`,
    encode(e: EncodableEvent): Buffer {
      if (e.type === 'ERROR') return line(e.type, e.objectJson);
      if (e.type === 'BOOKMARK') return line(e.type, tableJson(renderer, out.metaVersion, { resourceVersion: String(e.rv) }, [], withColumns));
      const obj: KubeObject = e.object();
      const row = tableRowJson(renderer, req.info, obj, e.objectJson, e.cluster, out, Date.now());
      const rv = obj.metadata?.resourceVersion ?? String(e.rv);
      return line(e.type, tableJson(renderer, out.metaVersion, { resourceVersion: rv }, [row], withColumns));
    },
  };
}

/** PartialObjectMetadata events (bookmarks too: the watch-list end annotation survives); ERROR passes through. */
function partialEncoder(metaVersion: 'v1' | 'v1beta1'): Encoder {
  return {
    id: `partial;${metaVersion}`,
    encode(e: EncodableEvent): Buffer {
      if (e.type === 'ERROR') return line(e.type, e.objectJson);
      return line(e.type, JSON.stringify(toPartialObjectMetadata(e.object(), metaVersion)));
    },
  };
}

/** The encoders of a watch request: every event's, and the first event's when it differs. */
export function watchEncoders(req: ResourceRequest): { encoder: Encoder; firstEncoder?: Encoder } {
  switch (req.output.kind) {
    case 'json':
      return { encoder: jsonEncoder };
    case 'table':
      return { encoder: tableEncoder(req, false), firstEncoder: tableEncoder(req, true) };
    case 'partial':
      return { encoder: partialEncoder(req.output.metaVersion) };
  }
}

/**
 * The Content-Type of a watch response. kube-apiserver's watch handler uses the stream
 * serializer's media type, which is plain `application/json` for JSON also when the events
 * carry Tables or PartialObjectMetadata (handlers/watch.go: only non-JSON types get
 * `;stream=watch`).
 */
export const watchContentType = 'application/json';
