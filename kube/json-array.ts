// A JSON document around one array whose elements are already JSON text (a list's items, a
// Table's rows), and its encoding as UTF-8 bytes element by element. A 500-object page is about
// 500 KiB: joined into one JavaScript string, that string is copied to be joined, scanned twice
// for its UTF-8 length (the compression decision, then the Content-Length) and encoded once more
// when the socket writes it. Each element is a small flat string; written one by one into a
// buffer of the summed length they cost a twentieth of that (`npm run bench:list` prints the
// apiserver's CPU per page).

/** `head`, then `items` separated by commas, then `tail`: e.g. `{"kind":"PodList",...,"items":[`, objects, `]}`. */
export interface JsonArrayText {
  head: string;
  items: readonly string[];
  tail: string;
}

/** The document as one string (watch events, small answers). */
export function jsonArrayString(d: JsonArrayText): string {
  return d.head + d.items.join(',') + d.tail;
}

/** The document as UTF-8 bytes, the same as `Buffer.from(jsonArrayString(d))`. */
export function jsonArrayBytes(d: JsonArrayText): Buffer {
  let size = Buffer.byteLength(d.head) + Buffer.byteLength(d.tail) + Math.max(0, d.items.length - 1);
  for (const item of d.items) size += Buffer.byteLength(item);
  const out = Buffer.allocUnsafe(size);
  let at = out.write(d.head, 0);
  for (let i = 0; i < d.items.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ','
    at += out.write(d.items[i], at);
  }
  at += out.write(d.tail, at);
  if (at !== size) throw new Error(`jsonArrayBytes: wrote ${at} bytes of ${size}`);
  return out;
}
