// The value object_labels.num holds for a label value: its int64 (kube's strconv.ParseInt),
// as decimal text so that it binds exactly on both engines, or null.
import { parseInt64 } from '../kube/labels.ts';

export function labelNumber(value: string): string | null {
  const n = parseInt64(value);
  return n === undefined ? null : n.toString();
}
