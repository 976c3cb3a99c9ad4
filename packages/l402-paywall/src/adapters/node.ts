// The paywall as Node/Express/Connect middleware:
// `app.get('/paid', l402Middleware(options), handler)`. Only the request line
// and headers are read, so body parsers downstream still see an untouched
// stream. Typed structurally so the library needs no node: import. What follows
// the handler is the shared serve step (serve.ts), run when the answer is
// finished: Node writes the answer itself, so the paid headers are set before
// the handler and the receipt taken off again if the answer is an error.
import { logError, type L402Options } from '../paywall/options.js';
import type { Paid, Payment, Refusal } from '../core/decision.js';
import { PAYMENT_RECEIPT_HEADER } from '../schemes/payment/charge.js';
import type { LoadAuditBuilder } from './audit.js';
import { PAID_CACHE_CONTROL, paywallGate, receiptFor } from './serve.js';

interface NodeRequest {
  method?: string;
  url?: string;
  originalUrl?: string;
  headers: Record<string, string | string[] | undefined>;
  // Node's socket; only `encrypted` (TLS) is read. Typed `object`: an all-optional
  // type here would make Express's Request unassignable (TypeScript's weak-type check).
  socket?: object;
  l402?: Payment;
}

interface NodeResponse {
  statusCode: number;
  setHeader(name: string, value: string | string[]): unknown;
  removeHeader?(name: string): unknown;
  writeHead?: (...args: never[]) => unknown;
  getHeaders?(): Record<string, number | string | string[] | undefined>;
  readonly headersSent?: boolean;
  end(body?: string): unknown;
  once(event: 'finish', listener: () => void): unknown;
}

type Next = (error?: unknown) => void;

/** The package's l402Middleware (src/express.ts) is this one handed the event builder's loader. */
export function paywallNodeMiddleware(options: L402Options, loadAuditBuilder: LoadAuditBuilder): (req: NodeRequest, res: NodeResponse, next: Next) => void {
  const onError = options.onError ?? logError;
  const { serve, start, admit } = paywallGate(options, loadAuditBuilder);
  return (req, res, next) => {
    const startedAt = start();
    let request: Request;
    try {
      request = toWebRequest(req);
    } catch {
      // e.g. TRACE or CONNECT, which Web Requests cannot carry: refuse, never 500.
      writeJson(res, 405, { error: `Method ${req.method} cannot be used on a paid route`, code: 'METHOD_NOT_ALLOWED' });
      return;
    }
    // A throw while deciding reaches next(error), as a rejection does.
    Promise.resolve()
      .then(() => admit(request, startedAt))
      .then(
        (decision) => {
          if (decision.kind === 'refused') {
            writeRefusal(res, decision);
            return;
          }
          // onPaid is handed the Web Request, marked paid: getPaidRequest reads it as withL402's.
          req.l402 = decision.payment;
          res.setHeader('Cache-Control', PAID_CACHE_CONTROL);
          if (decision.receipt !== undefined) withReceipt(res, decision);
          // Express error handlers answer 5xx after next(err): the status is known when the answer is finished.
          res.once('finish', () => serve.finished(request, decision, res.statusCode, startedAt, () => answerHead(res)));
          try {
            next();
          } catch (error) {
            // A Connect-style handler that throws (Express catches its own): answered 500, which gives the use back.
            onError(error, 'the handler after l402Middleware threw');
            if (!res.headersSent) writeJson(res, 500, { error: 'internal error', code: 'INTERNAL' });
          }
        },
        (error) => next(error),
      );
  };
}

function writeJson(res: NodeResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(body));
}

function writeRefusal(res: NodeResponse, refusal: Refusal): void {
  res.statusCode = refusal.status;
  // WWW-Authenticate comes more than once: one header line each.
  const grouped = new Map<string, string[]>();
  for (const [key, value] of refusal.headers) grouped.set(key, [...(grouped.get(key) ?? []), value]);
  for (const [key, values] of grouped) res.setHeader(key, values.length === 1 ? values[0]! : values);
  res.end(JSON.stringify(refusal.body));
}

/**
 * Sets the Payment-Receipt for the paid answer before the handler runs (as
 * Cache-Control), and takes it off again if the answer turns out an error:
 * Node writes every answer's head through writeHead, explicit or implied.
 */
function withReceipt(res: NodeResponse, paid: Paid): void {
  res.setHeader(PAYMENT_RECEIPT_HEADER, paid.receipt!);
  const writeHead = res.writeHead;
  if (typeof writeHead !== 'function' || typeof res.removeHeader !== 'function') return;
  res.writeHead = function (this: NodeResponse, ...args: never[]) {
    const status = typeof args[0] === 'number' ? (args[0] as number) : this.statusCode;
    if (receiptFor(paid, status) === undefined) this.removeHeader!(PAYMENT_RECEIPT_HEADER);
    return (writeHead as (...a: never[]) => unknown).apply(this, args);
  };
}

/** What onPaid is handed for an answer Node has already written: its status and headers (the body went to the client). */
function answerHead(res: NodeResponse): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.getHeaders?.() ?? {})) {
    if (value === undefined) continue;
    try {
      if (Array.isArray(value)) for (const item of value) headers.append(name, item);
      else headers.set(name, String(value));
    } catch {
      // a value a Web Headers refuses: left out of what onPaid sees
    }
  }
  // A Response's status is 200 to 599; a paid answer that went out is below 500.
  const status = res.statusCode >= 200 && res.statusCode <= 599 ? res.statusCode : 200;
  return new Response(null, { status, headers });
}

function toWebRequest(req: NodeRequest): Request {
  const headers = new Headers();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined || key.startsWith(':')) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(key, v);
    else headers.set(key, value);
  }
  const protocol = (req.socket as { encrypted?: boolean } | undefined)?.encrypted ? 'https' : 'http';
  const path = req.originalUrl ?? req.url ?? '/';
  let url: URL;
  try {
    url = new URL(path, `${protocol}://${headers.get('host') ?? 'localhost'}`);
  } catch {
    url = new URL(path, `${protocol}://localhost`); // a hostile Host header must not turn into a 500
  }
  // new Request() throws on a URL with credentials, which a Host like "a@b" produces.
  url.username = '';
  url.password = '';
  return new Request(url, { method: req.method ?? 'GET', headers });
}
