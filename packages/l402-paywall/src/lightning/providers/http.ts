// The shared HTTP layer of the REST/JSON Lightning backends (LNbits, Phoenixd,
// LND, CLNRest, Blink): one bounded request over fetch (a timeout over the
// whole exchange, a capped answer size), zod validation of every answer, and
// the mapping every provider needs: unreachable, slow, 5xx or nonsense ->
// ProviderUnavailable (503 upstream); refused credentials -> ProviderConfigError
// naming the setting to fix. fetch, so the backends run on the edge too; a
// backend behind a private CA (LND's self-signed certificate) takes a fetch
// that trusts it (`l402-paywall/node`'s `fetchTrustingCa`).
import type { z } from 'zod';
import type { Network } from '../bolt11.js';
import { ProviderConfigError, ProviderUnavailable } from '../provider.js';
import { readBoundedText } from '../../http/read-bounded.js';
import { errorMessage, parseJson, utf8ToBase64 } from './checks.js';

import type { Fetch } from '../../http/fetch-type.js';
export type { Fetch };

/** What every HTTP backend's options have besides its address and credentials. */
export interface CommonBackendOptions {
  /** Invoices for any other network are refused (LIGHTNING_NETWORK). */
  network: Network;
  /** Per call to the backend; default 10000 ms. */
  timeoutMs?: number;
  /** Default globalThis.fetch. */
  fetch?: Fetch;
}

export interface BackendHttpOptions {
  /** Human name used in messages, e.g. "LNbits". */
  backend: string;
  baseUrl: string;
  /** Default DEFAULT_TIMEOUT_MS. */
  timeoutMs?: number;
  headers: Record<string, string>;
  /** The setting named when the backend refuses our credentials, e.g. LNBITS_API_KEY. */
  credentialSetting: string;
  /** Default globalThis.fetch. */
  fetch?: Fetch;
  maxResponseBytes?: number;
  /** For backends that report refused credentials with another status (LND: 500 "verification failed"). */
  isAuthFailure?(status: number, body: string): boolean;
}

export interface BackendRequest {
  method: 'GET' | 'POST';
  /** Appended to the base URL's path. */
  path: string;
  json?: unknown;
  form?: Record<string, string | number | undefined>;
  /** Streamed answers (LND's NDJSON): resolve with the first complete line and hang up. */
  firstLineOnly?: boolean;
}

export interface BackendResponse {
  status: number;
  body: string;
}

export interface BackendHttp {
  readonly backend: string;
  /** The whole exchange's limit, each call. */
  readonly timeoutMs: number;
  send(request: BackendRequest): Promise<BackendResponse>;
  /** A 2xx JSON answer of this shape, or ProviderUnavailable. */
  json<S extends z.ZodType>(request: BackendRequest, schema: S): Promise<z.output<S>>;
  /** Validates an answer already received (non-2xx -> ProviderUnavailable). */
  parse<S extends z.ZodType>(response: BackendResponse, schema: S): z.output<S>;
}

const DEFAULT_MAX_RESPONSE_BYTES = 1 << 20;
const DEFAULT_TIMEOUT_MS = 10_000;

export function backendHttp(options: BackendHttpOptions): BackendHttp {
  const { backend, credentialSetting } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch {
    throw new ProviderConfigError(credentialSetting, `${backend} URL is not a URL`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new ProviderConfigError(credentialSetting, `${backend} URL must be http(s)`);
  // fetch refuses URLs with credentials in them; a backend behind a proxy with Basic auth gets them as a header.
  const urlCredentials =
    base.username || base.password ? `Basic ${utf8ToBase64(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`)}` : undefined;
  base.username = '';
  base.password = '';
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const doFetch: Fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));

  async function send(request: BackendRequest): Promise<BackendResponse> {
    const url = new URL(base);
    const [path, query] = request.path.split('?', 2) as [string, string | undefined];
    url.pathname = base.pathname.replace(/\/+$/, '') + path;
    url.search = query ?? '';
    let body: string | undefined;
    const headers: Record<string, string> = { accept: 'application/json', ...(urlCredentials ? { authorization: urlCredentials } : {}), ...options.headers };
    if (request.json !== undefined) {
      body = JSON.stringify(request.json);
      headers['content-type'] = 'application/json';
    } else if (request.form) {
      const form = new URLSearchParams();
      for (const [k, v] of Object.entries(request.form)) if (v !== undefined) form.set(k, String(v));
      body = form.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }

    // One deadline for connect, headers and body: a backend that trickles bytes is as dead as one that is silent.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let response: BackendResponse;
    try {
      const answer = await doFetch(url, { method: request.method, headers, body, signal: controller.signal, redirect: 'error' });
      const ok = answer.status >= 200 && answer.status < 300;
      const firstLineOnly = request.firstLineOnly && ok;
      const enough = firstLineOnly ? (soFar: string) => firstLine(soFar) !== undefined : undefined;
      // Lenient: a backend's stray byte is not worth losing its error message over; the answer's shape is checked after.
      const read = await readBoundedText(answer.body, maxBytes, { lenient: true, enough });
      if (!read.ok) throw new ProviderUnavailable(`${backend} answered more than ${maxBytes} bytes`); // lenient: never not-utf8
      const text = read.text;
      response = { status: answer.status, body: firstLineOnly ? (firstLine(`${text}\n`) ?? '') : text };
    } catch (error) {
      if (error instanceof ProviderUnavailable) throw error;
      if (controller.signal.aborted) throw new ProviderUnavailable(`${backend} did not answer within ${timeoutMs} ms`);
      throw unreachable(error);
    } finally {
      clearTimeout(timer);
      // Hang up on whatever is still streaming (a first line read, a refused size).
      controller.abort();
    }
    if (response.status === 401 || response.status === 403 || options.isAuthFailure?.(response.status, response.body)) {
      throw new ProviderConfigError(credentialSetting, `${credentialSetting} was refused by ${backend} (HTTP ${response.status})`);
    }
    return response;
  }

  function unreachable(error: unknown): ProviderUnavailable {
    // fetch puts the reason (ECONNREFUSED, ENOTFOUND, a certificate error) in its cause; the URL is left out in case it carries credentials.
    const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
    const code = typeof cause?.code === 'string' ? cause.code : undefined;
    return new ProviderUnavailable(`${backend} is unreachable${code ? ` (${code})` : ''}`, { cause: error });
  }

  function parse<S extends z.ZodType>(response: BackendResponse, schema: S): z.output<S> {
    if (response.status < 200 || response.status >= 300) {
      const detail = errorMessage(response.body);
      throw new ProviderUnavailable(`${backend} answered HTTP ${response.status}${detail ? `: ${detail}` : ''}`);
    }
    const value = parseJson(response.body);
    if (value === undefined) throw new ProviderUnavailable(`${backend} answered something that is not JSON`);
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ProviderUnavailable(`${backend} answered an unexpected shape (${issue.path.join('.') || 'body'}: ${issue.message})`);
    }
    return parsed.data;
  }

  return {
    backend,
    timeoutMs,
    send,
    parse,
    async json(request, schema) {
      return parse(await send(request), schema);
    },
  };
}

function firstLine(text: string): string | undefined {
  for (const line of text.split('\n').slice(0, -1)) if (line.trim() !== '') return line;
  return undefined;
}
