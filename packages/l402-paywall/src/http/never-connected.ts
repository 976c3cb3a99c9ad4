// Whether a failed fetch never reached the server: no connection was made, so
// not a byte of the request was sent. A payment asked that way surely did not
// happen; any other failure (a reset, a timeout, a broken answer) may have come
// after the server acted on the request.

/**
 * Failures before the connection exists: refused, no route to the host, the
 * name not resolved (ENOTFOUND, EAI_AGAIN), undici's connect timeout.
 */
const BEFORE_CONNECTING = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * The code (ECONNREFUSED, ENOTFOUND, ...) when `error`, as fetch throws it (a
 * TypeError whose cause carries the code; with several addresses tried, an
 * AggregateError of them all), says no connection was ever made; otherwise
 * undefined.
 */
export function neverConnected(error: unknown): string | undefined {
  const cause = (error as { cause?: unknown } | null)?.cause as { code?: unknown; errors?: unknown } | null | undefined;
  if (!cause || typeof cause !== 'object') return undefined;
  // Every address tried must have failed before connecting.
  const tried = Array.isArray(cause.errors) && cause.errors.length > 0 ? (cause.errors as ({ code?: unknown } | null)[]) : [cause];
  const codes = tried.map((each) => each?.code);
  return codes.every((code) => typeof code === 'string' && BEFORE_CONNECTING.has(code)) ? (codes[0] as string) : undefined;
}
