// Where the apiserver's OpenAPI schemas come from: the member documents synchro stored
// (storage/openapi.ts). The small table of references (cluster, group version → document hash)
// is read at most every refreshMs and kept when storage is away; documents are loaded by hash
// only when a served document is built, parsed once, indexed by x-kubernetes-group-version-kind
// and kept in a cache bounded by their JSON size, so clusters with identical documents cost one
// copy per replica.
import type { Logger } from '../../lib/log.ts';
import type { OpenAPIFormat } from '../../storage/openapi.ts';
import type { Store } from '../../storage/store.ts';
import { gvkKeys, namedSchemas, type JsonObject } from '../../kube/openapi-convert.ts';

/** A parsed document: its named schemas and which schema describes which kind. */
export interface SourceDoc {
  hash: string;
  form: OpenAPIFormat;
  schemas: Record<string, JsonObject>;
  /** `group/version/Kind` → schema name. */
  byGvk: Map<string, string>;
  /** Size of the JSON text (the cache's measure). */
  bytes: number;
}

export interface SourceRef {
  hash: string;
  format: OpenAPIFormat;
}

export interface SourcesOptions {
  /** How often the references are read again (default 2 s). */
  refreshMs?: number;
  /** JSON bytes of parsed documents kept (default 24 MiB). */
  cacheBytes?: number;
  log?: Logger;
}

/** Indexes a parsed document. */
export function sourceDoc(hash: string, form: OpenAPIFormat, doc: JsonObject, bytes: number): SourceDoc {
  const schemas = namedSchemas(doc, form);
  const byGvk = new Map<string, string>();
  for (const [name, s] of Object.entries(schemas)) for (const k of gvkKeys(s)) if (!byGvk.has(k)) byGvk.set(k, name);
  return { hash, form, schemas, byGvk, bytes };
}

export class OpenAPISources {
  private refs = new Map<string, Map<string, SourceRef>>();
  private readAt = 0;
  private reading?: Promise<void>;
  private readonly cache = new Map<string, SourceDoc>();
  private cachedBytes = 0;
  /** Cache hits and loads, for tests and metrics. */
  readonly stats = { loads: 0, hits: 0 };

  constructor(
    private readonly store: Store,
    private readonly opts: SourcesOptions = {},
  ) {}

  /** cluster → group version ('' for a whole v2 document) → document; the last known ones when storage fails. */
  async references(): Promise<Map<string, Map<string, SourceRef>>> {
    if (Date.now() - this.readAt >= (this.opts.refreshMs ?? 2000)) {
      this.reading ??= this.store
        .clusterOpenAPI()
        .then((rows) => {
          const next = new Map<string, Map<string, SourceRef>>();
          for (const r of rows) {
            if (!r.present) continue;
            let m = next.get(r.cluster);
            if (!m) next.set(r.cluster, (m = new Map()));
            m.set(r.groupVersion, { hash: r.hash, format: r.format });
          }
          this.refs = next;
          this.readAt = Date.now();
        })
        .catch((err: Error) => {
          this.opts.log?.warn('cannot read the OpenAPI references; serving the last known ones', { error: err.message });
        })
        .finally(() => {
          this.reading = undefined;
        });
      await this.reading;
    }
    return this.refs;
  }

  /** The document a resource's schema comes from: the first of `clusters` with a v3 document of the group version, else one with a v2 document. */
  static pick(refs: Map<string, Map<string, SourceRef>>, clusters: string[], groupVersion: string): SourceRef | undefined {
    for (const c of clusters) {
      const r = refs.get(c)?.get(groupVersion);
      if (r) return r;
    }
    for (const c of clusters) {
      const r = refs.get(c)?.get('');
      if (r) return r;
    }
    return undefined;
  }

  /** Parsed documents by hash (those still stored). */
  async load(hashes: string[]): Promise<Map<string, SourceDoc>> {
    const out = new Map<string, SourceDoc>();
    const missing: string[] = [];
    for (const h of new Set(hashes)) {
      const doc = this.cache.get(h);
      if (doc) {
        this.cache.delete(h); // most recently used last
        this.cache.set(h, doc);
        out.set(h, doc);
        this.stats.hits++;
      } else missing.push(h);
    }
    if (missing.length) {
      for (const [hash, d] of await this.store.openAPIDocuments(missing)) {
        const doc = sourceDoc(hash, d.format, JSON.parse(d.body) as JsonObject, d.body.length);
        this.stats.loads++;
        out.set(hash, doc);
        this.cache.set(hash, doc);
        this.cachedBytes += doc.bytes;
      }
      const limit = this.opts.cacheBytes ?? 24 * 1024 * 1024;
      for (const [h, d] of this.cache) {
        if (this.cachedBytes <= limit || this.cache.size <= 1) break;
        this.cache.delete(h);
        this.cachedBytes -= d.bytes;
      }
    }
    return out;
  }
}
