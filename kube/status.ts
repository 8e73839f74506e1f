// Kubernetes `Status` errors. Every failure a client sees is one of these; its message and
// causes go through the one redactor (lib/redact.ts) when the error is made, so no
// credential a request carried, or synchro loaded, reaches an answer.
import { redact } from '../lib/redact.ts';

export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Expired'
  | 'Gone'
  | 'Invalid'
  | 'UnsupportedMediaType'
  | 'RequestEntityTooLarge'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'Timeout';

/** metav1.StatusCause: `reason` is the machine-readable cause (Go's field is named Type, its JSON key is reason). */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: StatusReason;
  details?: StatusDetails;
  code: number;
}

const codes: Record<StatusReason, number> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  AlreadyExists: 409,
  Conflict: 409,
  Gone: 410,
  Expired: 410,
  RequestEntityTooLarge: 413,
  UnsupportedMediaType: 415,
  Invalid: 422,
  TooManyRequests: 429,
  InternalError: 500,
  ServiceUnavailable: 503,
  Timeout: 504,
};

const redactCause = (c: StatusCause): StatusCause => ({
  ...c,
  ...(c.message !== undefined ? { message: redact(c.message) } : {}),
  ...(c.field !== undefined ? { field: redact(c.field) } : {}),
});

/** An error that carries the Kubernetes reason and HTTP code it is served with. */
export class StatusError extends Error {
  override name = 'StatusError';
  readonly reason: StatusReason;
  readonly code: number;
  readonly details?: StatusDetails;

  constructor(reason: StatusReason, message: string, details?: StatusDetails) {
    super(redact(message));
    this.reason = reason;
    this.code = codes[reason];
    this.details = details?.causes ? { ...details, causes: details.causes.map(redactCause) } : details;
  }

  toStatus(): Status {
    const status: Status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: redact(this.message),
      reason: this.reason,
      code: this.code,
    };
    if (this.details) status.details = this.details;
    return status;
  }
}

export const badRequest = (message: string, details?: StatusDetails) => new StatusError('BadRequest', message, details);
export const invalid = (message: string, details?: StatusDetails) => new StatusError('Invalid', message, details);
export const notFound = (message: string, details?: StatusDetails) => new StatusError('NotFound', message, details);
/** 410 Expired, as kube-apiserver answers a compacted resourceVersion or continue token. */
export const expired = (message: string) => new StatusError('Expired', message);
