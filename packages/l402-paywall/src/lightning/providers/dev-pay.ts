// The dev wallet as HTTP endpoints. Paying: `POST {invoice}` settles an
// invoice of a dev node (fake money) and answers `{preimage, paymentHash,
// amountMsat}`; what `l402-paywall --dev <url>`, the MCP server's --dev and
// devWallet() call at <url>/api/dev/pay. Receiving: `POST {amountSats?}` makes
// an invoice (without an amount when none is given: a prepaid session's
// return invoice) and `GET .../<paymentHash>` says whether it was paid, and
// how much; devWallet() calls them at <url>/api/dev/receive. The hosted
// service's /api/dev/pay and /api/dev/receive are these handlers too.
import { z } from 'zod';
import { readBoundedText } from '../../http/read-bounded.js';
import { DEV_MAX_EXPIRY_SECONDS, DevPaymentError, type DevNode } from './dev.js';
import { productionNodeEnv } from './dev-environment.js';

/** The request body: a BOLT11 invoice, and nothing else. */
export const DevPayRequest = z.strictObject({ invoice: z.string({ error: 'invoice is required (a BOLT11 invoice of the dev node)' }).min(1).max(4096) });

/** A BOLT11 invoice is a few hundred bytes; anything near this is not one. */
const BODY_LIMIT_BYTES = 16 * 1024;

const STATUS: Record<DevPaymentError['code'], number> = {
  INVALID_INVOICE: 400,
  NOT_DEV_INVOICE: 400,
  UNKNOWN_INVOICE: 404,
  INVOICE_EXPIRED: 410,
  ALREADY_PAID: 409,
};

export interface DevPayHandlerOptions {
  /** The body must arrive whole within this time, or 408 REQUEST_TIMEOUT; default 10 000 ms. */
  bodyTimeoutMs?: number;
}

/**
 * A Web-standard handler for `POST {invoice}` that pays with `devNode`'s dev
 * wallet, e.g. `export const POST = createDevPayHandler(devNode)` in a Next.js
 * `app/api/dev/pay/route.ts`. Errors are JSON `{error, code}`: 400 for a body
 * that is not `{invoice}` or an invoice that is not the dev node's, 404
 * UNKNOWN_INVOICE, 409 ALREADY_PAID, 410 INVOICE_EXPIRED, 405, 408, 413.
 *
 * It mints money, so it refuses to run in production: unless NODE_ENV is
 * unset, `development` or `test` (any other value counts as production), it
 * answers 404 NOT_FOUND and pays nothing. Errors of the dev node's store are
 * thrown, for the framework to answer.
 */
export function createDevPayHandler(devNode: DevNode, options: DevPayHandlerOptions = {}): (request: Request) => Promise<Response> {
  if (!devNode || typeof devNode.pay !== 'function') throw new TypeError('createDevPayHandler: pass the dev node made by createDevNode()');
  const timeoutMs = options.bodyTimeoutMs ?? 10_000;
  return async (request) => {
    const environment = productionNodeEnv();
    if (environment !== undefined) {
      return failure(404, 'NOT_FOUND', `No dev wallet here: createDevPayHandler pays only outside production, and NODE_ENV is "${environment}"`);
    }
    if (request.method !== 'POST') {
      return failure(405, 'METHOD_NOT_ALLOWED', `Method ${request.method} is not allowed here; use POST`, {}, { Allow: 'POST' });
    }
    const body = await readBody(request, timeoutMs);
    if (body instanceof Response) return body;
    const parsed = DevPayRequest.safeParse(body.value);
    if (!parsed.success) return invalid(parsed.error);
    try {
      const paid = await devNode.pay(parsed.data.invoice);
      return Response.json({ preimage: paid.preimage, paymentHash: paid.paymentHash, amountMsat: paid.amountMsat });
    } catch (error) {
      if (error instanceof DevPaymentError) return failure(STATUS[error.code], error.code, error.message);
      throw error;
    }
  };
}

/** The body of a receive request: an amount in whole sats (none: the payer names it), a memo, and how long it may be paid (default an hour). */
export const DevReceiveRequest = z.strictObject({
  amountSats: z.number().int().min(1).max(100_000_000).optional(),
  memo: z.string().max(200).optional(),
  expirySeconds: z.number().int().min(1).max(DEV_MAX_EXPIRY_SECONDS).optional(),
});

/**
 * A Web-standard handler for the dev wallet's receiving side, e.g. in a
 * Next.js `app/api/dev/receive/[[...hash]]/route.ts`:
 * `const receive = createDevReceiveHandler(devNode); export { receive as GET, receive as POST };`. `POST {amountSats?, memo?, expirySeconds?}` makes an
 * invoice of `devNode` (without an amount when `amountSats` is absent) and
 * answers `{invoice, paymentHash, amountMsat, expiresAt}` (`amountMsat` null
 * for an invoice without an amount); `GET <anything>/<paymentHash>` answers
 * `{paymentHash, paid, amountMsat}` (what was paid; 0 before), 404
 * UNKNOWN_INVOICE for an invoice the node did not make. Like
 * createDevPayHandler it answers 404 NOT_FOUND in production.
 */
export function createDevReceiveHandler(devNode: DevNode, options: DevPayHandlerOptions = {}): (request: Request) => Promise<Response> {
  if (!devNode || typeof devNode.createAmountlessInvoice !== 'function')
    throw new TypeError('createDevReceiveHandler: pass the dev node made by createDevNode()');
  const timeoutMs = options.bodyTimeoutMs ?? 10_000;
  return async (request) => {
    const environment = productionNodeEnv();
    if (environment !== undefined) {
      return failure(404, 'NOT_FOUND', `No dev wallet here: createDevReceiveHandler runs only outside production, and NODE_ENV is "${environment}"`);
    }
    if (request.method === 'GET') {
      const hash = new URL(request.url).pathname.split('/').pop() ?? '';
      if (!/^[0-9a-f]{64}$/.test(hash)) return failure(400, 'INVALID_REQUEST', 'The path must end with the payment hash: 64 lower-case hex characters');
      const status = await devNode.lookupInvoice(hash);
      if (!status) return failure(404, 'UNKNOWN_INVOICE', 'The dev node did not make an invoice with this payment hash (or has forgotten it)');
      return Response.json({ paymentHash: hash, paid: status.settled, amountMsat: status.settled ? status.amountMsat : 0 });
    }
    if (request.method !== 'POST') {
      return failure(405, 'METHOD_NOT_ALLOWED', `Method ${request.method} is not allowed here; use POST or GET`, {}, { Allow: 'GET, POST' });
    }
    const body = await readBody(request, timeoutMs);
    if (body instanceof Response) return body;
    const parsed = DevReceiveRequest.safeParse(body.value);
    if (!parsed.success) return invalid(parsed.error);
    const { amountSats, memo, expirySeconds } = parsed.data;
    const invoice = { memo: memo ?? 'dev wallet', ...(expirySeconds === undefined ? {} : { expirySeconds }) };
    const made =
      amountSats === undefined
        ? { ...(await devNode.createAmountlessInvoice(invoice)), amountMsat: null }
        : await devNode.createInvoice({ ...invoice, amountMsat: amountSats * 1000 });
    return Response.json({ invoice: made.invoice, paymentHash: made.paymentHash, amountMsat: made.amountMsat, expiresAt: made.expiresAt });
  };
}

function invalid(error: z.ZodError): Response {
  const issues = error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
  const first = issues[0]!;
  const where = first.path && !first.message.startsWith(first.path) ? `${first.path}: ` : '';
  return failure(400, 'INVALID_REQUEST', `${where}${first.message}`, { issues });
}

/** The JSON body, or the answer that refuses it: bounded in size and time, UTF-8, JSON. */
async function readBody(request: Request, timeoutMs: number): Promise<{ value: unknown } | Response> {
  const tooLarge = () => failure(413, 'BODY_TOO_LARGE', `Request body must be at most ${BODY_LIMIT_BYTES} bytes`, { limit: BODY_LIMIT_BYTES });
  if (Number(request.headers.get('content-length') ?? '0') > BODY_LIMIT_BYTES) return tooLarge();
  const deadline = AbortSignal.timeout(timeoutMs);
  let read: Awaited<ReturnType<typeof readBoundedText>>;
  try {
    read = await readBoundedText(request.body, BODY_LIMIT_BYTES, { signal: deadline });
  } catch {
    if (deadline.aborted) return failure(408, 'REQUEST_TIMEOUT', `Request body did not arrive within ${timeoutMs / 1000} s`, {}, { Connection: 'close' });
    return failure(400, 'BODY_INCOMPLETE', 'Request body ended before it was complete');
  }
  if (!read.ok) return read.reason === 'too-large' ? tooLarge() : failure(400, 'INVALID_JSON', 'Request body is not valid UTF-8');
  if (read.text.trim() === '') return failure(400, 'INVALID_JSON', 'Request body must be a JSON object');
  try {
    return { value: JSON.parse(read.text) as unknown };
  } catch {
    return failure(400, 'INVALID_JSON', 'Request body is not valid JSON');
  }
}

function failure(status: number, code: string, error: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Response {
  return Response.json({ error, code, ...extra }, { status, headers });
}
