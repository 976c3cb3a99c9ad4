// Reading a body we do not control (a hostile request, an answer from someone
// else's host): never more than we asked for, never longer than we wait.
// The one bounded reader of the library and the service (lib/http/input.ts).

export interface ReadBoundedOptions {
  /** When it aborts first, the stream is cancelled and the signal's reason thrown. */
  signal?: AbortSignal;
  /**
   * Ends the read before the stream does, once this says the text so far is
   * enough (a streamed answer whose first line is all we need); the rest is
   * cancelled and the text so far returned.
   */
  enough?: (textSoFar: string) => boolean;
  /** Bytes that are not UTF-8 become U+FFFD instead of the refusal 'not-utf8'. */
  lenient?: boolean;
  /**
   * Past the limit, the text of the first `limit` bytes (a character split
   * there left out) with `cut: true`, instead of the refusal 'too-large':
   * for an answer shown to someone, where a part is better than nothing.
   */
  cut?: boolean;
}

/** The text, or why there is none (a result, not text, so that no body can be mistaken for a refusal). */
export type BoundedText = { ok: true; text: string; cut?: true } | { ok: false; reason: 'too-large' | 'not-utf8' };

const TOO_LARGE: BoundedText = Object.freeze({ ok: false, reason: 'too-large' });
const NOT_UTF8: BoundedText = Object.freeze({ ok: false, reason: 'not-utf8' });
const text = (value: string): BoundedText => ({ ok: true, text: value });

/**
 * Reads a body stream as UTF-8 up to `limit` bytes, cancelling it past that
 * (reason 'too-large'; with `cut`, the text up to the limit). Not UTF-8 is reason 'not-utf8' (unless `lenient`); no body, ''.
 */
export async function readBoundedText(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  { signal, enough, lenient = false, cut = false }: ReadBoundedOptions = {},
): Promise<BoundedText> {
  if (!body) return text('');
  signal?.throwIfAborted();
  const reader = body.getReader();
  // Cancelling ends a pending read as if the stream were done; the check after the loop tells the two apart.
  const stop = () => void reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener('abort', stop, { once: true });
  const decoder = new TextDecoder('utf-8', { fatal: !lenient });
  let soFar = '';
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit && !cut) return TOO_LARGE;
      const decoded = decode(decoder, size > limit ? value.subarray(0, value.byteLength - (size - limit)) : value);
      if (decoded === undefined) return NOT_UTF8;
      soFar += decoded;
      // Not flushed: an incomplete character at the cut is left out, not replaced.
      if (size > limit) return { ok: true, text: soFar, cut: true };
      if (enough?.(soFar)) return text(soFar);
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    // Hang up on whatever is still coming (a refused size, an early end); after the end it does nothing.
    // Not awaited: a cancellation can wait forever (see discard-body.ts).
    reader.cancel().catch(() => {});
  }
  signal?.throwIfAborted();
  const rest = decode(decoder);
  return rest === undefined ? NOT_UTF8 : text(soFar + rest);
}

/** A chunk decoded (the end of the stream without one), or undefined when the bytes are not UTF-8. */
function decode(decoder: TextDecoder, chunk?: Uint8Array): string | undefined {
  try {
    return chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode();
  } catch {
    return undefined;
  }
}
