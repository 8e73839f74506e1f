// Serving OpenAPI for a view (its groups, from the catalog) as kube-apiserver does
// (kube-openapi's handler and handler3):
// - /openapi/v3: `{paths: {"api/v1": {serverRelativeURL: "<prefix>/openapi/v3/api/v1?hash=…"}}}`;
// - /openapi/v3/<gv>: the group version's document, JSON only (406 otherwise); with `?hash=`
//   immutable caching, an outdated hash is redirected (301) to the current one;
// - /openapi/v2: JSON, or the gnostic protobuf for
//   `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (kubectl's validation), 406
//   for anything else. ETag and If-None-Match (304) everywhere.
// A document is named by what it is built from: the kinds served (resource, kind, scope,
// verbs) and the hash of the stored member document each schema comes from. Its ETag (and
// ?hash=) is the sha512 of that, so the v3 root and 304s need no building; documents are
// built on first request and cached by that name (bounded by size), so views and replicas
// with the same members share them.
import type { OpenAPIV2, OpenAPIV3 } from 'openapi-types';
import { createHash } from 'node:crypto';
import type { Logger } from '../../lib/log.ts';
import { StatusError } from '../../kube/status.ts';
import { encodeOpenAPIV2, openapiV2ProtobufSubtypes, openapiV2ProtobufType } from '../../kube/openapi-proto.ts';
import type { JsonObject } from '../../kube/openapi-convert.ts';
import type { Store } from '../../storage/store.ts';
import type { GroupEntry } from '../discovery/catalog.ts';
import type { Compression } from '../endpoints/compression.ts';
import type { Reply } from '../endpoints/reply.ts';
import { panoptesVersion } from '../discovery/documents.ts';
import { parseAccept } from '../endpoints/negotiate.ts';
import { pathNotFound } from '../endpoints/errors.ts';
import { buildGroupVersionV3, buildV2, panoptesSource, type ServedGroupVersion } from './build.ts';
import { OpenAPISources, type SourceDoc, type SourceRef, type SourcesOptions } from './sources.ts';

/** Bumped when the documents built from the same inputs change. */
const builderRevision = 1;

export interface OpenAPIServiceOptions extends SourcesOptions {
  /** Bytes of built documents kept (default 64 MiB). */
  servedCacheBytes?: number;
  log?: Logger;
}

export interface OpenAPIRequest {
  /** The path below /openapi: ['v2'], ['v3'], ['v3', 'api', 'v1'], ['v3', 'apis', G, V]. */
  segs: string[];
  accept?: string;
  ifNoneMatch?: string;
  /** The `hash` query parameter. */
  hash?: string;
  /** The view's URL prefix ('' at the server root). */
  prefix: string;
}

interface PlannedGroupVersion {
  key: string;
  group: string;
  version: string;
  kinds: Array<{ gv: GroupEntry['versions'][number]['resources'][number]; ref?: SourceRef | 'panoptes' }>;
  etag: string;
}

interface Built {
  json: string;
  protobuf?: Buffer;
  bytes: number;
}

const sha512 = (s: string) => createHash('sha512').update(s).digest('hex').toUpperCase();
const gvKey = (group: string, version: string) => (group ? `apis/${group}/${version}` : `api/${version}`);
let panoptesHashOf: { doc: SourceDoc; hash: string } | undefined;
/** The hash of Panoptes's own definitions (computed once the kinds are registered). */
function panoptesHash(): string {
  const doc = panoptesSource();
  if (panoptesHashOf?.doc !== doc) panoptesHashOf = { doc, hash: createHash('sha256').update(JSON.stringify(doc.schemas)).digest('hex') };
  return panoptesHashOf.hash;
}

export class OpenAPIService {
  readonly sources: OpenAPISources;
  private readonly built = new Map<string, Built>();
  private builtBytes = 0;
  private readonly building = new Map<string, Promise<Built>>();
  /** Documents built (not served from the cache), for tests. */
  builds = 0;

  constructor(
    store: Store,
    private readonly opts: OpenAPIServiceOptions = {},
  ) {
    this.sources = new OpenAPISources(store, opts);
  }

  async serve(groups: GroupEntry[], req: OpenAPIRequest): Promise<Reply> {
    const plan = this.plan(groups, await this.sources.references());
    const [kind, ...rest] = req.segs;
    if (kind === 'v3' && rest.length === 0) {
      const paths: Record<string, { serverRelativeURL: string }> = {};
      for (const gv of plan) paths[gv.key] = { serverRelativeURL: `${req.prefix}/openapi/v3/${gv.key}?hash=${gv.etag}` };
      const body = JSON.stringify({ paths });
      return this.reply(req, sha512(body), 'application/json', 'never', () => body);
    }
    if (kind === 'v3') {
      const gv = plan.find((p) => p.key === rest.join('/'));
      if (!gv) throw pathNotFound();
      if (!acceptsJson(req.accept)) throw notAcceptable();
      if (req.hash && req.hash !== gv.etag) {
        return { status: 301, type: 'application/json', body: '', headers: { Location: `${req.prefix}/openapi/v3/${gv.key}?hash=${gv.etag}` } };
      }
      const immutable = req.hash ? { 'Cache-Control': 'public, immutable', Expires: new Date(Date.now() + 365 * 86_400_000).toUTCString() } : undefined;
      const doc = await this.document(gv.etag, async () => buildGroupVersionV3(await this.resolve(gv)));
      return this.reply(req, gv.etag, 'application/json', 'never', () => doc.json, immutable);
    }
    if (kind === 'v2' && rest.length === 0) {
      const etag = sha512(plan.map((p) => p.etag).join(','));
      const type = negotiateV2(req.accept);
      const doc = await this.document(etag, async () => buildV2(await Promise.all(plan.map((p) => this.resolve(p)))));
      if (type === 'protobuf') return this.reply(req, etag, openapiV2ProtobufType, 'openapi-v2', () => (doc.protobuf ??= encodeOpenAPIV2(JSON.parse(doc.json) as JsonObject)));
      return this.reply(req, etag, 'application/json', 'openapi-v2', () => doc.json);
    }
    throw pathNotFound();
  }

  /** `compression`: v2 is gzipped as kube-openapi's gziphandler does, v3 never (apiserver/endpoints/compression.ts). */
  private reply(req: OpenAPIRequest, etag: string, type: string, compression: Compression, body: () => string | Buffer, extra?: Record<string, string>): Reply {
    const headers: Record<string, string> = { ETag: `"${etag}"`, Vary: 'Accept', 'Cache-Control': 'no-cache, private', ...extra };
    if (req.ifNoneMatch && req.ifNoneMatch.split(',').some((t) => t.trim() === `"${etag}"` || t.trim() === '*')) return { status: 304, type, body: '', headers, compression };
    return { type, body: body(), headers, compression };
  }

  /** The served group versions of a view with the document each kind's schema comes from, and their ETags. */
  private plan(groups: GroupEntry[], refs: Map<string, Map<string, SourceRef>>): PlannedGroupVersion[] {
    const out: PlannedGroupVersion[] = [];
    for (const g of groups) {
      for (const v of g.versions) {
        const key = gvKey(g.name, v.version);
        const kinds = v.resources.map((r) => ({ gv: r, ref: r.group === 'panoptes.io' ? ('panoptes' as const) : OpenAPISources.pick(refs, r.clusters, key) }));
        const name = JSON.stringify([
          builderRevision,
          panoptesVersion,
          key,
          kinds.map((k) => [k.gv.resource, k.gv.kind, k.gv.namespaced, k.gv.verbs ?? null, k.ref === 'panoptes' ? panoptesHash() : (k.ref?.hash ?? null)]),
        ]);
        out.push({ key, group: g.name, version: v.version, kinds, etag: sha512(name) });
      }
    }
    return out;
  }

  private async resolve(p: PlannedGroupVersion): Promise<ServedGroupVersion> {
    const hashes = p.kinds.flatMap((k) => (k.ref && k.ref !== 'panoptes' ? [k.ref.hash] : []));
    const docs = hashes.length ? await this.sources.load(hashes) : new Map<string, SourceDoc>();
    return {
      group: p.group,
      version: p.version,
      kinds: p.kinds.map((k) => ({ info: k.gv, source: k.ref === 'panoptes' ? panoptesSource() : k.ref ? docs.get(k.ref.hash) : undefined })),
    };
  }

  /** A built document from the cache, or built once (concurrent requests share the build). */
  private async document(name: string, build: () => Promise<OpenAPIV2.Document | OpenAPIV3.Document>): Promise<Built> {
    const hit = this.built.get(name);
    if (hit) {
      this.built.delete(name);
      this.built.set(name, hit);
      return hit;
    }
    let pending = this.building.get(name);
    if (!pending) {
      pending = (async () => {
        const started = Date.now();
        const json = JSON.stringify(await build());
        this.builds++;
        const doc: Built = { json, bytes: json.length };
        this.opts.log?.debug('openapi document built', { bytes: json.length, ms: Date.now() - started });
        this.remember(name, doc);
        return doc;
      })().finally(() => this.building.delete(name));
      this.building.set(name, pending);
    }
    return pending;
  }

  private remember(name: string, doc: Built): void {
    this.built.set(name, doc);
    this.builtBytes += doc.bytes;
    const limit = this.opts.servedCacheBytes ?? 64 * 1024 * 1024;
    for (const [k, d] of this.built) {
      if (this.builtBytes <= limit || this.built.size <= 1) break;
      this.built.delete(k);
      this.builtBytes -= d.bytes;
    }
  }
}

const notAcceptable = () => new StatusError('NotAcceptable', `only the following media types are accepted: application/json, ${openapiV2ProtobufType}`);

function acceptsJson(accept: string | undefined): boolean {
  if (!accept || !accept.trim()) return true;
  return parseAccept(accept).some((m) => (m.type === 'application' || m.type === '*') && (m.subtype === 'json' || m.subtype === '*'));
}

/** kube-openapi's order: the first acceptable clause (by q) picks JSON or protobuf; none: 406. */
function negotiateV2(accept: string | undefined): 'json' | 'protobuf' {
  if (!accept || !accept.trim()) return 'json';
  for (const m of parseAccept(accept)) {
    if ((m.type === 'application' || m.type === '*') && (m.subtype === 'json' || m.subtype === '*')) return 'json';
    if (m.type === 'application' && openapiV2ProtobufSubtypes.includes(m.subtype)) return 'protobuf';
  }
  throw notAcceptable();
}
