// Reading hostile input: bounded bodies, JSON that parses, zod that decides.
// One policy for every JSON body: its schema is a z.strictObject, so a key the
// endpoint does not know is refused (400 INVALID_REQUEST `Unrecognized key: "x"`)
// rather than silently ignored: a misspelt optional field would otherwise pass.
import { isIP } from 'node:net';
import { readBoundedText, type BoundedText } from 'l402-paywall/lightning';
import type { z } from 'zod';
import { HttpError } from './errors.js';
import { ipv6Bytes } from 'l402-paywall/client';

export const DEFAULT_BODY_LIMIT = 16 * 1024;
/**
 * A body must arrive whole within this time: a client trickling it byte by
 * byte cannot hold a function (or the local server) for as long as it likes.
 * 408 REQUEST_TIMEOUT after it. The local server also bounds the headers
 * (scripts/dev-server.ts); on Vercel the platform does.
 */
export const BODY_TIMEOUT_MS = 10_000;

export interface BodyOptions {
  /** Bytes; default DEFAULT_BODY_LIMIT. */
  limit?: number;
  /** Default BODY_TIMEOUT_MS. */
  timeoutMs?: number;
}

export async function readJson<S extends z.ZodType>(request: Request, schema: S, options: number | BodyOptions = {}): Promise<z.infer<S>> {
  const text = await readRequestText(request, typeof options === 'number' ? { limit: options } : options);
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

/**
 * A request body as text: at most `limit` bytes (refused early on a declared or
 * actual larger body, 413), whole within `timeoutMs` (408).
 */
export async function readRequestText(request: Request, { limit = DEFAULT_BODY_LIMIT, timeoutMs = BODY_TIMEOUT_MS }: BodyOptions = {}): Promise<string> {
  const tooLarge = () => new HttpError(413, 'BODY_TOO_LARGE', `Request body must be at most ${limit} bytes`, { limit });
  if (Number(request.headers.get('content-length') ?? '0') > limit) throw tooLarge();
  const deadline = AbortSignal.timeout(timeoutMs);
  let read: BoundedText;
  try {
    read = await readBoundedText(request.body, limit, { signal: deadline });
  } catch {
    if (deadline.aborted) throw new HttpError(408, 'REQUEST_TIMEOUT', `Request body did not arrive within ${timeoutMs / 1000} s`, {}, { Connection: 'close' });
    // The client went away mid-body: nobody reads this answer, but it is no server error.
    throw new HttpError(400, 'BODY_INCOMPLETE', 'Request body ended before it was complete');
  }
  if (read.ok) return read.text;
  if (read.reason === 'too-large') throw tooLarge();
  throw new HttpError(400, 'INVALID_JSON', 'Request body is not valid UTF-8');
}

/**
 * The caller's address as the platform saw it: Vercel (and the dev server)
 * set x-real-ip themselves, so clients cannot choose their rate-limit bucket.
 */
export function clientIp(request: Request): string {
  return request.headers.get('x-real-ip') ?? request.headers.get('x-forwarded-for')?.split(',')[0]?.trim() ?? 'unknown';
}

/**
 * Who a client address stands for in a per-client budget: an IPv4 address as
 * it is; an IPv6 address by its /64, since one subscriber is handed a whole
 * /64 and could otherwise be a new client with every address in it.
 */
export function clientNetwork(ip: string): string {
  const bytes = isIP(ip) === 6 ? ipv6Bytes(ip) : null;
  if (!bytes) return ip;
  // ::ffff:a.b.c.d is the IPv4 client a.b.c.d.
  if (bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.subarray(12).join('.');
  const groups = Array.from({ length: 4 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16));
  return `${groups.join(':')}::/64`;
}
