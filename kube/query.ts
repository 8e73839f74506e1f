// Query parameter decoding as kube-apiserver's (apimachinery runtime conversion).

/**
 * A boolean query parameter (`watch`, `allowWatchBookmarks`, `sendInitialEvents`, ...):
 * `0` and `false` in any case are false, every other value — the empty string included —
 * is true (Convert_Slice_string_To_bool). Never an error.
 */
export function queryBool(value: string): boolean {
  return !(value === '0' || value.toLowerCase() === 'false');
}

/** Whether a present parameter is true: absent is false. */
export function queryFlag(params: URLSearchParams, name: string): boolean {
  const v = params.get(name);
  return v !== null && queryBool(v);
}
