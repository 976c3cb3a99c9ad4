// A paid app speaking the IETF "Payment" scheme, built with mppx's server side
// (a peer implementation, not ours): a Lightning charge method defined here,
// whose invoices come from an in-process dev node and whose verification
// checks SHA256(preimage) = the payment hash the challenge was issued for,
// once per payment hash. Beside it on the same origin: the dev wallet
// (/api/dev/pay, what `--dev <url>` pays with), a route offering both L402
// (this project's withL402) and Payment, and a route whose 402 each test
// scripts (hostile challenges).
import { createHash } from 'node:crypto';
import { Errors, Method, z } from 'mppx';
import { Mppx } from 'mppx/server';
import { withL402 } from 'l402-paywall';
import { createDevPayHandler, type DevNode } from 'l402-paywall/backends';
import { listen } from './listen.js';

export const MPPX_SECRET = 'mppx-test-server-secret-0123456789abcdef';
export const MPP_REALM = 'mpp.test';

/** The Lightning charge of draft-lightning-charge, as an mppx method. */
export const lightningCharge = Method.from({
  name: 'lightning',
  intent: 'charge',
  schema: {
    credential: { payload: z.object({ preimage: z.string() }) },
    request: z.object({
      amount: z.string(),
      currency: z.string(),
      description: z.optional(z.string()),
      methodDetails: z.optional(
        z.object({
          invoice: z.string(),
          paymentHash: z.optional(z.string()),
          network: z.optional(z.string()),
        }),
      ),
    }),
  },
});

type ChargeRequest = { amount: string; currency: string; description?: string; methodDetails?: { invoice: string; paymentHash?: string; network?: string } };

/** How a route's charge request is made from its amount: by default a fresh dev-node invoice, exactly described. */
export type InvoiceFor = (amountSats: number) => Promise<NonNullable<ChargeRequest['methodDetails']>>;

/** The dev wallet (what `--dev <url>` pays with), counting in `state.devPayments` the invoices it paid. */
export function countedDevPay(node: DevNode, state: { devPayments: number }): (request: Request) => Promise<Response> {
  const devPay = createDevPayHandler(node);
  return async (request) => {
    const answer = await devPay(request);
    if (answer.ok) state.devPayments++;
    return answer;
  };
}

/** A fresh invoice of the dev node for the amount, on regtest. */
export const devNodeInvoice =
  (node: DevNode, memo: string): InvoiceFor =>
  async (amountSats) => {
    const created = await node.createInvoice({ amountMsat: amountSats * 1000, memo, expirySeconds: 600 });
    return { invoice: created.invoice, paymentHash: created.paymentHash, network: 'regtest' };
  };

/**
 * The Lightning charge as mppx's server side: a credential echoes the request
 * it was issued with (its invoice); without one, a fresh invoice for the
 * amount from `invoiceFor` (told the request's path where the transport has
 * one). Verified when SHA256(preimage) is the payment hash the challenge was
 * issued for, once per payment hash.
 */
export function lightningChargeServer(invoiceFor: (amountSats: number, pathname?: string) => ReturnType<InvoiceFor>) {
  const used = new Set<string>();
  return Method.toServer(lightningCharge, {
    async request({ request, credential, capturedRequest }) {
      if (credential) return credential.challenge.request as ChargeRequest;
      return { ...request, methodDetails: await invoiceFor(Number(request.amount), capturedRequest?.url.pathname) };
    },
    async verify({ credential }) {
      const paymentHash = (credential.challenge.request as ChargeRequest).methodDetails?.paymentHash ?? '';
      const { preimage } = credential.payload;
      const digest = /^[0-9a-f]{64}$/.test(preimage) ? createHash('sha256').update(Buffer.from(preimage, 'hex')).digest('hex') : '';
      if (digest !== paymentHash) throw new Errors.VerificationFailedError({ reason: 'SHA-256 of the preimage is not the payment hash' });
      if (used.has(paymentHash)) throw new Errors.VerificationFailedError({ reason: 'this payment was already used' });
      used.add(paymentHash);
      // draft-lightning-charge's receipt names the challenge; mppx's receipt schema keeps fields it does not know.
      return {
        method: 'lightning',
        reference: paymentHash,
        status: 'success',
        timestamp: new Date().toISOString(),
        challengeId: credential.challenge.id,
      } as never;
    },
  });
}

export interface MppApp {
  url: string;
  /** Authorization values the app received, in order. */
  authorizations: string[];
  /** Paid requests served (verified by mppx or withL402). */
  served: number;
  /** Invoices the dev wallet at /api/dev/pay paid. */
  devPayments: number;
  /** What /scripted answers next (set by each test). */
  script: (request: Request) => Response | Promise<Response>;
  /** How the /hostile route's Payment challenge is made (set by each test); its price is 2 sats. */
  hostile: { invoiceFor: InvoiceFor; expires?: Date; amount?: string };
  close(): Promise<void>;
}

/**
 * Routes: /api/dev/pay (the dev wallet), /mpp/weather (Payment only, 2 sats),
 * /mpp/dear (Payment only, 50 sats), /both (L402 and Payment, 2 sats each, a
 * separate invoice each), /hostile (Payment, 2 sats, invoice and expiry as
 * the test sets) and /scripted (whatever the test sets).
 */
export async function startMppApp(node: DevNode): Promise<MppApp> {
  const devInvoice = devNodeInvoice(node, 'mppx test');
  const state: Omit<MppApp, 'url' | 'close'> = {
    authorizations: [],
    served: 0,
    devPayments: 0,
    script: () => new Response('not scripted', { status: 500 }),
    hostile: { invoiceFor: devInvoice },
  };
  const method = lightningChargeServer((amountSats, pathname) => (pathname === '/hostile' ? state.hostile.invoiceFor : devInvoice)(amountSats));
  const mppx = Mppx.create({ methods: [method], secretKey: MPPX_SECRET, realm: MPP_REALM });

  const body = (request: Request) => Response.json({ paid: true, path: new URL(request.url).pathname });
  async function charged(request: Request, amount: string, options: { expires?: Date } = {}): Promise<Response> {
    const result = await mppx['lightning/charge']({
      amount,
      currency: 'sat',
      description: 'Weather for 94107',
      ...(options.expires && { expires: options.expires.toISOString() }),
    })(request);
    if (result.status === 402) return result.challenge;
    state.served++;
    return result.withReceipt(body(request));
  }

  const l402 = withL402(
    (request) => {
      state.served++;
      return body(request);
    },
    // L402 only: this route's Payment challenge is mppx's, so each scheme comes from a different implementation.
    { priceSats: 2, provider: node, secret: 'mpp-app-l402-secret-0123456789abcdef0123456789', schemes: { payment: false }, onError: () => {} },
  );
  async function both(request: Request): Promise<Response> {
    const authorization = request.headers.get('authorization') ?? '';
    if (/^payment /i.test(authorization)) return charged(request, '2');
    if (authorization) return l402(request);
    // No credential: the 402 of each, their challenges together.
    const [fromL402, fromMppx] = await Promise.all([l402(request.clone()), charged(request, '2')]);
    const headers = new Headers(fromL402.headers);
    for (const value of [fromMppx.headers.get('www-authenticate')]) if (value) headers.append('www-authenticate', value);
    return new Response(fromL402.body, { status: 402, headers });
  }

  const routes: Record<string, (request: Request) => Response | Promise<Response>> = {
    '/api/dev/pay': countedDevPay(node, state),
    '/mpp/weather': (request) => charged(request, '2'),
    '/mpp/dear': (request) => charged(request, '50'),
    '/both': both,
    '/hostile': (request) => charged(request, state.hostile.amount ?? '2', state.hostile),
    '/scripted': (request) => state.script(request),
  };
  const served = await listen((request) => {
    const authorization = request.headers.get('authorization');
    if (authorization && !request.url.endsWith('/api/dev/pay')) state.authorizations.push(authorization);
    const route = routes[new URL(request.url).pathname];
    return route ? route(request) : new Response('not found', { status: 404 });
  });
  return Object.assign(state, { url: served.url, close: served.close }) as MppApp;
}
