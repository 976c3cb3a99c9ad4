// Reading hostile input: bounded bodies, JSON that parses, zod that decides.
import type { z } from 'zod';
import { HttpError } from './errors.js';

export const DEFAULT_BODY_LIMIT = 16 * 1024;

export async function readJson<S extends z.ZodType>(request: Request, schema: S, limit = DEFAULT_BODY_LIMIT): Promise<z.infer<S>> {
  const text = await readText(request, limit);
  if (text.trim() === '') throw new HttpError(400, 'INVALID_JSON', 'Request body must be a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'INVALID_JSON', 'Request body is not valid JSON');
  }
  return schema.parse(value);
}

export function readQuery<S extends z.ZodType>(request: Request, schema: S): z.infer<S> {
  return schema.parse(Object.fromEntries(new URL(request.url).searchParams));
}

/** Reads at most `limit` bytes, refusing early on a declared or actual larger body. */
async function readText(request: Request, limit: number): Promise<string> {
  const tooLarge = () => new HttpError(413, 'BODY_TOO_LARGE', `Request body must be at most ${limit} bytes`, { limit });
  if (Number(request.headers.get('content-length') ?? '0') > limit) throw tooLarge();
  const text = await readBoundedText(request.body, limit);
  if (text === 'too-large') throw tooLarge();
  if (text === 'not-utf8') throw new HttpError(400, 'INVALID_JSON', 'Request body is not valid UTF-8');
  return text;
}

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
      await reader.cancel().catch(() => {});
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

/**
 * The caller's address as the platform saw it: Vercel (and the dev server)
 * set x-real-ip themselves, so clients cannot choose their rate-limit bucket.
 */
export function clientIp(request: Request): string {
  return request.headers.get('x-real-ip') ?? request.headers.get('x-forwarded-for')?.split(',')[0]?.trim() ?? 'unknown';
}
