// The shared HTTP layer of the REST/JSON Lightning backends (LNbits, Phoenixd,
// LND, CLNRest): one bounded request (timeout over the whole exchange, capped
// answer size, optional private CA for LND's self-signed certificate), zod
// validation of every answer, and the mapping every provider needs: unreachable,
// slow, 5xx or nonsense -> ProviderUnavailable (503 upstream); refused
// credentials -> ProviderConfigError naming the setting to fix.
// node:http(s) rather than fetch: fetch cannot trust a private CA without an
// extra dependency, and one transport keeps one set of failure modes.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { decodeInvoice, InvalidInvoice, type DecodedInvoice, type Network } from '../bolt11.js';
import { PaymentFailed, ProviderConfigError, ProviderUnavailable, ProviderUnsupported, type CreatedInvoice } from '../provider.js';

// Defined with the interface; re-exported here for the backends that use them.
export { ProviderConfigError, ProviderUnsupported } from '../provider.js';

export interface BackendHttpOptions {
  /** Human name used in messages, e.g. "LNbits". */
  backend: string;
  baseUrl: string;
  timeoutMs: number;
  headers: Record<string, string>;
  /** The setting named when the backend refuses our credentials, e.g. LNBITS_API_KEY. */
  credentialSetting: string;
  /** PEM of a private CA / self-signed certificate to trust for https. */
  ca?: string;
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
  send(request: BackendRequest): Promise<BackendResponse>;
  /** A 2xx JSON answer of this shape, or ProviderUnavailable. */
  json<S extends z.ZodType>(request: BackendRequest, schema: S): Promise<z.output<S>>;
  /** Validates an answer already received (non-2xx -> ProviderUnavailable). */
  parse<S extends z.ZodType>(response: BackendResponse, schema: S): z.output<S>;
}

const DEFAULT_MAX_RESPONSE_BYTES = 1 << 20;

export function backendHttp(options: BackendHttpOptions): BackendHttp {
  const { backend, timeoutMs, credentialSetting } = options;
  const base = new URL(options.baseUrl);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new ProviderConfigError(credentialSetting, `${backend} URL must be http(s)`);
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;

  function send(request: BackendRequest): Promise<BackendResponse> {
    const url = new URL(base);
    const [path, query] = request.path.split('?', 2) as [string, string | undefined];
    url.pathname = base.pathname.replace(/\/+$/, '') + path;
    url.search = query ?? '';
    let body: string | undefined;
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (request.json !== undefined) {
      body = JSON.stringify(request.json);
      headers['content-type'] = 'application/json';
    } else if (request.form) {
      const form = new URLSearchParams();
      for (const [k, v] of Object.entries(request.form)) if (v !== undefined) form.set(k, String(v));
      body = form.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));

    return new Promise<BackendResponse>((resolve, reject) => {
      // One deadline for connect, headers and body: a backend that trickles bytes is as dead as one that is silent.
      const signal = AbortSignal.timeout(timeoutMs);
      let settled = false;
      // `complete`: the answer ended by itself, so its (keep-alive) socket goes back to the pool intact.
      const finish = (error: Error | undefined, response?: BackendResponse, complete = false) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        if (!complete) req.destroy();
        if (error) reject(error);
        else resolve(response!);
      };
      const onAbort = () => finish(new ProviderUnavailable(`${backend} did not answer within ${timeoutMs} ms`));
      signal.addEventListener('abort', onAbort);

      const transport = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = transport(url, { method: request.method, headers, ...(options.ca && url.protocol === 'https:' ? { ca: options.ca } : {}) }, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const status = res.statusCode ?? 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) return finish(new ProviderUnavailable(`${backend} answered more than ${maxBytes} bytes`));
          chunks.push(chunk);
          if (request.firstLineOnly && status >= 200 && status < 300) {
            const text = Buffer.concat(chunks).toString('utf8');
            const line = firstLine(text);
            if (line !== undefined) finish(undefined, { status, body: line });
          }
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          finish(undefined, { status, body: request.firstLineOnly ? (firstLine(text + '\n') ?? '') : text }, true);
        });
        res.on('error', (error) => finish(unreachable(error)));
      });
      req.on('error', (error) => finish(unreachable(error)));
      if (signal.aborted) return onAbort();
      req.end(body);
    }).then((response) => {
      if (response.status === 401 || response.status === 403 || options.isAuthFailure?.(response.status, response.body)) {
        throw new ProviderConfigError(credentialSetting, `${credentialSetting} was refused by ${backend} (HTTP ${response.status})`);
      }
      return response;
    });
  }

  function unreachable(error: Error): ProviderUnavailable {
    const code = (error as NodeJS.ErrnoException).code;
    // The code (ECONNREFUSED, ENOTFOUND, CERT_...) says enough; the URL is left out in case it carries credentials.
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

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The backend's own error text (FastAPI `detail`, gRPC-gateway/CLN `message`, plain text), short and single-line. */
export function errorMessage(body: string): string {
  const value = parseJson(body) as Record<string, unknown> | undefined;
  let text: unknown = body;
  if (value && typeof value === 'object') {
    const nested = value.error && typeof value.error === 'object' ? (value.error as Record<string, unknown>) : undefined;
    text = value.detail ?? value.message ?? nested?.message ?? value.reason ?? value.error ?? '';
  }
  if (typeof text !== 'string') return '';
  return text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 200);
}

// ---------------------------------------------------------------------------
// Shapes and conversions shared by the backends

export const Hex32 = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex')
  .transform((s) => s.toLowerCase());

/** An integer that JSON may carry as a number or (gRPC-gateway uint64) a decimal string. */
export const IntLike = z
  .union([z.number(), z.string().regex(/^-?\d{1,17}$/).transform(Number)])
  .pipe(z.number().int().refine(Number.isSafeInteger, 'too large'));

export function satToMsat(sat: number): number {
  const msat = sat * 1000;
  if (!Number.isSafeInteger(msat)) throw new ProviderUnavailable('Amount out of range');
  return msat;
}

/** Sat-denominated APIs (LNbits, Phoenixd) cannot ask for a fraction of a sat. */
export function wholeSats(amountMsat: number, backend: string): number {
  if (!Number.isSafeInteger(amountMsat) || amountMsat <= 0) throw new RangeError('amountMsat must be a positive integer');
  if (amountMsat % 1000 !== 0) throw new ProviderUnsupported(`${backend} invoices are in whole satoshis; ${amountMsat} msat is not`);
  return amountMsat / 1000;
}

export function base64ToHex(b64: string): string {
  return Buffer.from(b64, 'base64').toString('hex');
}

export function hexToBase64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(typeof data === 'string' ? Buffer.from(data, 'hex') : data).digest('hex');
}

/**
 * A preimage the backend claims for `paymentHash`, checked: it must hash to it.
 * All-zero (LNbits' "unknown") or absent gives undefined; a wrong one is nonsense.
 */
export function checkedPreimage(backend: string, paymentHash: string, preimage: string | null | undefined): string | undefined {
  if (!preimage || /^0+$/.test(preimage)) return undefined;
  const hex = preimage.toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex) || sha256Hex(hex) !== paymentHash) {
    throw new ProviderUnavailable(`${backend} gave a preimage that does not match the payment hash`);
  }
  return hex;
}

export interface ExpectedInvoice {
  amountMsat: number;
  /** The hash the backend claims the invoice has. */
  paymentHash: string;
  descriptionHash?: string;
  network: Network;
}

/** Decodes an invoice about to be paid; one that does not decode is refused before anything is sent. */
export function invoiceToPay(invoice: string): DecodedInvoice {
  try {
    return decodeInvoice(invoice.trim());
  } catch (error) {
    if (error instanceof InvalidInvoice) throw new PaymentFailed(`Not paid: ${error.message}`);
    throw error;
  }
}

/**
 * Decodes (signature checked) the invoice a backend just issued and refuses it unless
 * it is what was asked for: amount, the claimed payment hash, the description hash,
 * our network. Selling with an invoice for another amount or hash would give away
 * the resource or lose the payment, so a mismatch is never accepted.
 * Answers the invoice as createInvoice returns it.
 */
export function issuedInvoice(backend: string, invoice: string, expected: ExpectedInvoice): CreatedInvoice {
  let decoded: DecodedInvoice;
  try {
    decoded = decodeInvoice(invoice);
  } catch (error) {
    if (error instanceof InvalidInvoice) throw new ProviderUnavailable(`${backend} issued an invalid invoice (${error.reason})`);
    throw error;
  }
  if (decoded.network !== expected.network) {
    throw new ProviderConfigError('LIGHTNING_NETWORK', `${backend} issues invoices for ${decoded.network}, but LIGHTNING_NETWORK is ${expected.network}`);
  }
  if (decoded.amountMsat !== expected.amountMsat) {
    throw new ProviderUnavailable(`${backend} issued an invoice for ${decoded.amountMsat ?? 'any'} msat instead of ${expected.amountMsat}`);
  }
  if (decoded.paymentHash !== expected.paymentHash.toLowerCase()) {
    throw new ProviderUnavailable(`${backend} issued an invoice whose payment hash is not the one it reported`);
  }
  if (expected.descriptionHash && decoded.descriptionHash !== expected.descriptionHash.toLowerCase()) {
    throw new ProviderUnavailable(`${backend} issued an invoice without the requested description hash`);
  }
  return { invoice, paymentHash: decoded.paymentHash, amountMsat: expected.amountMsat, expiresAt: decoded.expiresAt };
}
