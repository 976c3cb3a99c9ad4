// Reading an answer from a host we do not control: never more than we asked for.
/**
 * Reads a body stream as UTF-8 up to `limit` bytes, cancelling it past that:
 * for hostile requests and for answers from hosts we do not control.
 */
export async function readBoundedText(body: ReadableStream<Uint8Array> | null, limit: number): Promise<string | 'too-large' | 'not-utf8'> {
  if (!body) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // Not awaited: a cancellation can wait forever (see discard-body.ts).
      reader.cancel().catch(() => {});
      return 'too-large';
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return 'not-utf8';
  }
}
