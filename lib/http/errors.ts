// Every error leaves as JSON {error, code} (docs/architecture.md decision 9).

export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function json(body: unknown, init: ResponseInit = {}): Response {
  const headers = new Headers(init.headers);
  if (!headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
  return new Response(JSON.stringify(body), { ...init, headers });
}

export function errorResponse(
  status: number,
  code: string,
  error: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  return json({ error, code, ...extra }, { status, headers });
}

/** 503 NOT_CONFIGURED: the operator has a setting to make, named in `missing`. */
export function notConfigured(message: string, missing: string[], retryAfterSeconds: number): HttpError {
  return new HttpError(503, 'NOT_CONFIGURED', message, { missing }, { 'Retry-After': String(retryAfterSeconds) });
}

/** 429 and 503 answers tell the client when to come back. */
export function retryLater(status: 429 | 503, code: string, message: string, retryAfterSeconds: number): HttpError {
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
  return new HttpError(status, code, message, { retryAfter: seconds }, { 'Retry-After': String(seconds) });
}
