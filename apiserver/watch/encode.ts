// Serialize once: every event the engine sends is an OutEvent, which caches its bytes per
// encoder id, so N watchers of one output format share one Buffer. A change from the log
// becomes at most three OutEvents (as ADDED, MODIFIED or DELETED, by selector transition),
// each shared by every watcher that sees that transition.
import { tracing } from '../../lib/trace.ts';
import { stringifyJson } from '../../kube/json-text.ts';
import type { Change, KubeObject } from '../../storage/types.ts';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** What an encoder sees of one event. */
export interface EncodableEvent {
  readonly type: WatchEventType;
  /** The object as JSON text, exactly as served: spliced into JSON output, never re-serialized. */
  readonly objectJson: string;
  /** The object parsed (cached and shared by every encoder and watcher: do not mutate). */
  object(): KubeObject;
  /** The member cluster of an object event; '' for BOOKMARK and ERROR. */
  readonly cluster: string;
  /** The event's resourceVersion (for BOOKMARK: the bookmark's; for ERROR: 0). */
  readonly rv: number;
}

/**
 * Turns an event into the bytes of one output format. `id` names the format and everything
 * that changes its output (e.g. `table;includeObject=Metadata`): two encoders with the same
 * id must produce the same bytes for the same event, since the bytes are cached by id.
 */
export interface Encoder {
  readonly id: string;
  encode(event: EncodableEvent): Buffer;
}

/** One JSON line per event: `{"type":"ADDED","object":<object JSON as stored>}\n`. */
export const jsonEncoder: Encoder = {
  id: 'json',
  encode(e) {
    return Buffer.from(`{"type":"${e.type}","object":${e.objectJson}}\n`, 'utf8');
  },
};

/** One event as sent: an object, a bookmark or an error, with its encodings cached. */
/** While tracing (lib/trace.ts): the rv of each encoded event's bytes, for the mark of its socket write. */
export const rvOfBytes = new WeakMap<Buffer, number>();

export class OutEvent implements EncodableEvent {
  private parsed: KubeObject | undefined;
  private readonly encoded = new Map<string, Buffer>();
  /** Bytes held by the cached encodings. */
  encodedBytes = 0;
  /** Told the size of each encoding cached (the window counts them against its bound). */
  onEncoded: ((bytes: number) => void) | undefined;

  constructor(
    readonly type: WatchEventType,
    readonly objectJson: string,
    readonly rv: number,
    readonly cluster: string = '',
    parsed?: KubeObject,
  ) {
    this.parsed = parsed;
  }

  object(): KubeObject {
    this.parsed ??= JSON.parse(this.objectJson) as KubeObject;
    return this.parsed;
  }

  /** The bytes of this event for `encoder`, encoded once per encoder id. */
  bytes(encoder: Encoder): Buffer {
    let b = this.encoded.get(encoder.id);
    if (!b) {
      b = encoder.encode(this);
      if (tracing) rvOfBytes.set(b, this.rv);
      this.encoded.set(encoder.id, b);
      this.encodedBytes += b.length;
      this.onEncoded?.(b.length);
    }
    return b;
  }

  /** Drops the parsed object (kept only while an event is being dispatched). */
  release(): void {
    this.parsed = undefined;
  }
}

/** A BOOKMARK: only kind, apiVersion and metadata.resourceVersion (and annotations for watch-list). */
export function bookmarkEvent(kind: string, apiVersion: string, rv: number, annotations?: Record<string, string>): OutEvent {
  const metadata: { resourceVersion: string; annotations?: Record<string, string> } = { resourceVersion: String(rv) };
  if (annotations) metadata.annotations = annotations;
  return new OutEvent('BOOKMARK', JSON.stringify({ kind, apiVersion, metadata }), rv);
}

/** An ERROR event carrying a Status. */
export function errorEvent(status: object): OutEvent {
  return new OutEvent('ERROR', JSON.stringify(status), 0);
}

/**
 * One change of the log, as the engine dispatches it: the change, its objects parsed on
 * demand (for label, field and owner filters), and its OutEvent per resulting event type.
 */
export class ChangeEvent {
  private obj: KubeObject | undefined;
  private prevObj: KubeObject | null | undefined;
  private readonly outs: Partial<Record<'ADDED' | 'MODIFIED' | 'DELETED', OutEvent>> = {};
  /**
   * Approximate bytes held, for the window's bound: the object and prev texts and
   * bookkeeping, plus every encoding its events cache (JSON, Table per column set, partial
   * metadata...), counted as they are made.
   */
  size: number;
  /** Set by the window while it holds this change. */
  onResize: ((delta: number) => void) | undefined;

  constructor(readonly change: Change) {
    this.size = change.object.length + (change.prevObject?.length ?? 0) + 512;
  }

  private grow(bytes: number): void {
    this.size += bytes;
    this.onResize?.(bytes);
  }

  get rv(): number {
    return this.change.rv;
  }

  object(): KubeObject {
    this.obj ??= JSON.parse(this.change.object) as KubeObject;
    return this.obj;
  }

  /** The object before the change, or null (ADDED). */
  prev(): KubeObject | null {
    if (this.prevObj === undefined) this.prevObj = this.change.prevObject === null ? null : (JSON.parse(this.change.prevObject) as KubeObject);
    return this.prevObj;
  }

  /**
   * The event a watcher gets for this change as `type`. ADDED and MODIFIED carry the object;
   * DELETED carries the object of a DELETED change, or — for an object that stopped
   * matching — its previous state at this change's rv (as kube-apiserver's cacher does).
   */
  as(type: 'ADDED' | 'MODIFIED' | 'DELETED'): OutEvent {
    let out = this.outs[type];
    if (out) return out;
    const c = this.change;
    if (type === 'DELETED' && c.type !== 'DELETED' && c.prevObject !== null) {
      const prev = JSON.parse(c.prevObject) as KubeObject;
      const atRv: KubeObject = { ...prev, metadata: { ...prev.metadata, resourceVersion: String(c.rv) } };
      out = new OutEvent('DELETED', stringifyJson(atRv), c.rv, c.cluster, atRv);
      this.grow(out.objectJson.length);
    } else {
      out = new OutEvent(type, c.object, c.rv, c.cluster, this.obj);
    }
    out.onEncoded = (bytes) => this.grow(bytes);
    this.outs[type] = out;
    return out;
  }

  /** Drops parsed objects once dispatched (the window keeps text and encoded bytes only). */
  release(): void {
    this.obj = undefined;
    this.prevObj = undefined;
    for (const o of Object.values(this.outs)) o?.release();
  }
}
