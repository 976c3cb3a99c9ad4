// State behind the fake Lightning backends: a little node per fake server with
// real BOLT11 invoices (signed with its own random key), a balance, outgoing
// payments, and knobs for the failures the providers must survive. All fake
// nodes form one network: any of them can pay another's invoice, which
// settles it there (the preimage registry below stands in for routing).
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { decodeInvoice, encodeInvoice, type Network } from 'l402-paywall/lightning';

export type Fault =
  | 'none'
  /** Answer 500 with the backend's error body. */
  | 'status500'
  /** Answer 200 with an HTML page (a proxy's error page). */
  | 'html'
  /** Answer 200 with broken JSON. */
  | 'garbage'
  /** Accept the connection and never answer. */
  | 'hang'
  /** Issue invoices for another amount than asked. */
  | 'wrong-amount'
  /** Issue invoices naming an amount when asked for one without. */
  | 'amount-when-none'
  /** Issue invoices whose payment hash is not the one reported. */
  | 'wrong-hash'
  /** Issue invoices committing to another description hash. */
  | 'wrong-description-hash';

export interface FakeInvoice {
  invoice: string;
  paymentHash: string;
  preimage: string;
  /** For an invoice without an amount: 0 until paid, then what the payer paid. */
  amountMsat: number;
  /** The invoice names no amount: the payer does. */
  amountless?: boolean;
  description?: string;
  descriptionHash?: string;
  expiresAt: number;
  createdAt: number;
  settled: boolean;
  webhookUrl?: string;
  label?: string;
}

export interface FakePayment {
  paymentHash: string;
  amountMsat: number;
  state: 'pending' | 'succeeded' | 'failed';
  preimage?: string;
  feeMsat: number;
  reason?: string;
  createdAt: number;
}

// The fake network: payment hash -> the node and invoice that can be settled.
const network = new Map<string, { node: FakeNode; invoice: FakeInvoice }>();

export class FakeNode {
  readonly key = randomBytes(32).toString('hex');
  readonly invoices = new Map<string, FakeInvoice>();
  readonly payments = new Map<string, FakePayment>();
  balanceMsat = 50_000_000;
  /** What every payment costs in routing fees; more than the payer's limit = "fee too high". */
  routingFeeMsat = 2_000;
  fault: Fault = 'none';
  /** The next payments stay in flight (the backend's answer waits, or says pending). */
  paymentsStayPending = false;
  /** No route reaches this node: paying its invoices fails. */
  offline = false;
  constructor(readonly network: Network = 'regtest') {}

  createInvoice(input: {
    /** Absent: an invoice without an amount. */
    amountMsat?: number;
    description?: string;
    descriptionHash?: string;
    expirySeconds?: number;
    webhookUrl?: string;
    label?: string;
  }): FakeInvoice {
    const preimage = randomBytes(32).toString('hex');
    const paymentHash = sha256Hex(preimage);
    const timestamp = Math.floor(Date.now() / 1000);
    const expirySeconds = input.expirySeconds ?? 3600;
    const encodedHash = this.fault === 'wrong-hash' ? sha256Hex(randomBytes(32).toString('hex')) : paymentHash;
    const encodedAmount =
      input.amountMsat === undefined
        ? this.fault === 'amount-when-none'
          ? 1000
          : undefined
        : this.fault === 'wrong-amount'
          ? input.amountMsat + 1000
          : input.amountMsat;
    const descriptionHash =
      this.fault === 'wrong-description-hash' && input.descriptionHash ? sha256Hex(randomBytes(32).toString('hex')) : input.descriptionHash;
    const invoice = encodeInvoice(
      {
        network: this.network,
        ...(encodedAmount === undefined ? {} : { amountMsat: encodedAmount }),
        timestamp,
        paymentHash: encodedHash,
        paymentSecret: randomBytes(32).toString('hex'),
        ...(descriptionHash ? { descriptionHash } : { description: input.description ?? '' }),
        expirySeconds,
      },
      this.key,
    );
    const record: FakeInvoice = {
      invoice,
      paymentHash,
      preimage,
      amountMsat: input.amountMsat ?? 0,
      ...(input.amountMsat === undefined ? { amountless: true } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.descriptionHash ? { descriptionHash: input.descriptionHash } : {}),
      expiresAt: timestamp + expirySeconds,
      createdAt: timestamp,
      settled: false,
      ...(input.webhookUrl ? { webhookUrl: input.webhookUrl } : {}),
      ...(input.label ? { label: input.label } : {}),
    };
    this.invoices.set(paymentHash, record);
    network.set(paymentHash, { node: this, invoice: record });
    return record;
  }

  /** Someone out on the network pays our invoice (`amountMsat`, for one without an amount). */
  settle(paymentHash: string, amountMsat?: number): FakeInvoice {
    const invoice = this.invoices.get(paymentHash);
    if (!invoice) throw new Error(`fake node has no invoice ${paymentHash}`);
    if (!invoice.settled) {
      invoice.settled = true;
      if (invoice.amountless) invoice.amountMsat = amountMsat ?? 0;
      this.balanceMsat += invoice.amountMsat;
    }
    return invoice;
  }

  /**
   * Pays a BOLT11 invoice from this node. A refusal before sending returns `refused`;
   * otherwise the payment is recorded (succeeded, failed, or pending when told to).
   */
  pay(bolt11: string, maxFeeMsat: number | undefined, payerAmountMsat?: number): { refused: string } | { payment: FakePayment } {
    let decoded;
    try {
      decoded = decodeInvoice(bolt11);
    } catch (error) {
      return { refused: `invalid invoice: ${(error as Error).message}` };
    }
    if (decoded.amountMsat === null && payerAmountMsat === undefined) return { refused: 'amount must be specified' };
    if (decoded.amountMsat !== null && payerAmountMsat !== undefined && payerAmountMsat !== decoded.amountMsat)
      return { refused: 'amount must not be specified' };
    const amountMsat = decoded.amountMsat ?? payerAmountMsat!;
    const existing = this.payments.get(decoded.paymentHash);
    if (existing && existing.state !== 'failed') return { refused: 'invoice is already paid' };
    if (amountMsat + this.routingFeeMsat > this.balanceMsat) return { refused: 'insufficient balance' };
    const payment: FakePayment = {
      paymentHash: decoded.paymentHash,
      amountMsat,
      state: 'pending',
      feeMsat: this.routingFeeMsat,
      createdAt: Date.now(),
    };
    this.payments.set(decoded.paymentHash, payment);
    if (this.paymentsStayPending) return { payment };
    const target = network.get(decoded.paymentHash);
    if (maxFeeMsat !== undefined && this.routingFeeMsat > maxFeeMsat) {
      payment.state = 'failed';
      payment.reason = 'route too expensive';
    } else if (!target || target.node.offline || target.invoice.settled || target.invoice.expiresAt < Date.now() / 1000) {
      payment.state = 'failed';
      payment.reason = 'no route';
    } else {
      target.node.settle(decoded.paymentHash, amountMsat);
      this.balanceMsat -= amountMsat + this.routingFeeMsat;
      payment.state = 'succeeded';
      payment.preimage = target.invoice.preimage;
    }
    return { payment };
  }
}

export function sha256Hex(hex: string): string {
  return createHash('sha256').update(Buffer.from(hex, 'hex')).digest('hex');
}

// ---------------------------------------------------------------------------
// The HTTP side

export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface FakeAnswer {
  status: number;
  /** Objects are sent as JSON. */
  body: unknown;
  contentType?: string;
  /** Write the body but never end the answer (a stream that stays open). */
  keepOpen?: boolean;
  /** Send nothing at all (a backend still working on it). */
  hold?: boolean;
}

export interface FakeServer {
  readonly url: string;
  readonly requests: FakeRequest[];
  close(): Promise<void>;
}

/**
 * A local HTTP server for one fake backend. Faults that look the same on every
 * backend (HTML, garbage, hang) are applied here; `errorBody` gives the backend's
 * own 500 shape.
 */
export async function serveFake(
  node: FakeNode,
  options: { errorBody: unknown; handle(request: FakeRequest): FakeAnswer | Promise<FakeAnswer>; tls?: { key: string; cert: string } },
): Promise<FakeServer> {
  const requests: FakeRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const listener: RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const request: FakeRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      const answer = (a: FakeAnswer) => {
        if (a.hold || a.keepOpen) hanging.add(res);
        if (a.hold) return;
        const text = typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
        res.writeHead(a.status, { 'content-type': a.contentType ?? (typeof a.body === 'string' ? 'text/plain' : 'application/json') });
        if (a.keepOpen) res.write(text);
        else res.end(text);
      };
      switch (node.fault) {
        case 'hang':
          hanging.add(res);
          return;
        case 'status500':
          return answer({ status: 500, body: options.errorBody });
        case 'html':
          return answer({ status: 200, body: '<html><body><h1>502 Bad Gateway</h1></body></html>', contentType: 'text/html' });
        case 'garbage':
          return answer({ status: 200, body: '{"payment_hash": "ab', contentType: 'application/json' });
      }
      Promise.resolve()
        .then(() => options.handle(request))
        .then(answer, (error: unknown) => answer({ status: 500, body: { message: String(error) } }));
    });
  };
  const server: Server = options.tls ? createTlsServer(options.tls, listener) : createServer(listener);
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** POSTs a webhook the way backends do (best effort, like theirs). */
export async function deliverWebhook(url: string, body: string, headers: Record<string, string> = {}): Promise<void> {
  try {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, signal: AbortSignal.timeout(2000) });
    await response.body?.cancel();
  } catch {
    // backends do not fail a payment because its webhook did not arrive
  }
}
