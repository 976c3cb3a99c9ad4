// Letting go of an answer's body without reading it.
/**
 * Cancels a body we will not read, without waiting for the cancellation.
 * Waiting can last forever: when a fetch wrapper hands out one branch of a
 * tee() and keeps the other (Next.js's fetch does, to share GET answers within
 * a request), cancelling our branch settles only once the other branch is
 * cancelled too, which nobody does. The connection is released either way.
 */
export function discardBody(body: ReadableStream<Uint8Array> | null): void {
  body?.cancel().catch(() => {});
}
