// Storage failures that the apiserver serves as Kubernetes Status errors.
import { StatusError } from '../kube/status.ts';

/** The rv is older than the compacted part of the change log: 410 Expired. */
export class CompactedError extends StatusError {
  override name = 'CompactedError';
  readonly requested: number;
  readonly compacted: number;
  constructor(requested: number, compacted: number, what: 'watch' | 'continue' | 'list') {
    super(
      'Expired',
      what === 'continue'
        ? `The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.`
        : `too old resource version: ${requested} (${compacted})`,
    );
    this.requested = requested;
    this.compacted = compacted;
  }
}

/** The rv asked for is newer than anything committed yet. The apiserver waits, then answers 504. */
export class RvTooLargeError extends StatusError {
  override name = 'RvTooLargeError';
  readonly requested: number;
  readonly current: number;
  constructor(requested: number, current: number) {
    super('Timeout', `Too large resource version: ${requested}, current: ${current}`, {
      causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
      retryAfterSeconds: 1,
    });
    this.requested = requested;
    this.current = current;
  }
}
