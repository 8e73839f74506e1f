// The shapes of a write's body and of the resourceVersions in it that the proxy rewrites (rv-fields.ts for JSON and YAML, rv-protobuf.ts for protobuf).
/** What a resourceVersion in a body means: the object's version, a delete precondition, or a JSON patch test (with its path). */
export type RvPlace = { kind: 'object' } | { kind: 'precondition' } | { kind: 'test'; path: string };

/** Maps one resourceVersion found in a body to the value to send (or throws a StatusError). */
export type MapRv = (rv: string, place: RvPlace) => Promise<string>;

/** What a write's body is: an object (update, patch), DeleteOptions (delete) or an Eviction. */
export type BodyShape = 'object' | 'deleteOptions' | 'eviction';
