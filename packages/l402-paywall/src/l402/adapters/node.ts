// Express/Connect adapter: `app.get('/paid', l402Middleware(options), handler)`.
// Only the request line and headers are read, so body parsers downstream still
// see an untouched stream. Typed structurally so lib/l402 needs no node: import.
import { createPaywall } from '../../paywall/assemble.js';
import { logError, type L402Options } from '../../paywall/options.js';
import { paywallAudit, type LoadAuditBuilder } from '../audit.js';
import type { Payment } from '../../core/decision.js';
import { PAYMENT_RECEIPT_HEADER } from '../../schemes/payment/charge.js';

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
  end(body?: string): unknown;
  once(event: 'finish', listener: () => void): unknown;
}

type Next = (error?: unknown) => void;

/** The package's l402Middleware (src/express.ts) is this one handed the event builder's loader. */
export function l402Middleware(options: L402Options, loadAuditBuilder: LoadAuditBuilder): (req: NodeRequest, res: NodeResponse, next: Next) => void {
  const paywall = createPaywall(options);
  const audit = paywallAudit(options, options.onError ?? logError, loadAuditBuilder);
  return (req, res, next) => {
    const startedAt = audit ? performance.now() : 0;
    let request: Request;
    try {
      request = toWebRequest(req);
    } catch {
      // e.g. TRACE or CONNECT, which Web Requests cannot carry: refuse, never 500.
      res.statusCode = 405;
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ error: `Method ${req.method} cannot be used on a paid route`, code: 'METHOD_NOT_ALLOWED' }));
      return;
    }
    paywall.decide(request).then(
      (decision) => {
        if (decision.kind === 'refused') {
          audit?.refused(request, decision, startedAt);
          res.statusCode = decision.status;
          const grouped = new Map<string, string[]>();
          for (const [key, value] of decision.headers) grouped.set(key, [...(grouped.get(key) ?? []), value]);
          for (const [key, values] of grouped) res.setHeader(key, values.length === 1 ? values[0]! : values);
          res.end(JSON.stringify(decision.body));
          return;
        }
        req.l402 = decision.payment;
        res.setHeader('Cache-Control', 'no-store');
        const receipt = decision.receipt;
        if (receipt !== undefined) withReceipt(res, receipt);
        // Express error handlers answer 5xx after next(err): give the use back then.
        res.once('finish', () => {
          if (res.statusCode >= 500) void decision.release();
          else {
            audit?.served(request, decision, res.statusCode, startedAt);
            decision.served?.();
          }
        });
        next();
      },
      (error) => next(error),
    );
  };
}

/**
 * Sets the Payment-Receipt for the paid answer, before the handler runs (as
 * Cache-Control), and takes it off again if the answer turns out an error:
 * Node writes every answer's head through writeHead, explicit or implied.
 */
function withReceipt(res: NodeResponse, receipt: string): void {
  res.setHeader(PAYMENT_RECEIPT_HEADER, receipt);
  const writeHead = res.writeHead;
  if (typeof writeHead !== 'function' || typeof res.removeHeader !== 'function') return;
  res.writeHead = function (this: NodeResponse, ...args: never[]) {
    const status = typeof args[0] === 'number' ? (args[0] as number) : this.statusCode;
    if (status >= 400) this.removeHeader!(PAYMENT_RECEIPT_HEADER);
    return (writeHead as (...a: never[]) => unknown).apply(this, args);
  };
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
