// The paying client against servers that speak the IETF "Payment" scheme
// (MPP, Lightning charge): a server built with mppx's server side
// (../support/mpp-server.ts; invoices from a dev node, verification by
// SHA256(preimage) = payment hash) is paid on first try by fetchWithL402, by
// the command line (a child process, the real bin) and by the MCP server
// (through the MCP SDK's client), within the budget, and the receipt is
// reported. What must not be paid is refused before the wallet is asked:
// too dear, over budget, wrong network, convenience fields that disagree with
// the invoice, expired, methods or intents this client does not pay.
import { randomBytes } from 'node:crypto';
import { Challenge, Credential } from 'mppx';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDevNode } from 'l402-paywall/backends';
import { encodeInvoice } from 'l402-paywall/lightning';
import {
  createBudget,
  createTokenStore,
  devWallet,
  fetchWithL402,
  getL402Receipt,
  getPaymentReceipt,
  L402ClientError,
  type FetchWithL402Options,
} from 'l402-paywall/client';
import type { L402Event } from 'l402-paywall/events';
import { BindingKeyring, formatChallenge, formatReceipt, lightningChargeChallenge } from '../../src/mpp.js';
import { recordingWallet, type RecordingWallet } from '../support/paid-apps.js';
import { MPPX_SECRET, startMppApp, type InvoiceFor, type MppApp } from '../support/mpp-server.js';
import { connectMcpBin, runBin, toolJson, type McpBin } from '../support/bin.js';
const node = createDevNode();
let app: MppApp;
let wallet: RecordingWallet;

beforeAll(async () => {
  app = await startMppApp(node);
});
afterAll(() => app?.close());
beforeEach(() => {
  wallet = recordingWallet(node);
  app.authorizations.length = 0;
  app.served = 0;
  app.devPayments = 0;
});

const hex32 = () => randomBytes(32).toString('hex');
const sha256Hex = async (hex: string) => Buffer.from(await crypto.subtle.digest('SHA-256', Buffer.from(hex, 'hex'))).toString('hex');

/** The error a call rejects with, checked to be an L402ClientError. */
async function refusal(work: Promise<unknown>): Promise<L402ClientError> {
  const error = await work.then(
    () => expect.fail('expected the call to be refused'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(L402ClientError);
  return error as L402ClientError;
}

/** The Payment credentials the app received, read by mppx's own Credential codec and checked against its secret. */
async function mppxReadCredentials() {
  const payments = app.authorizations.filter((a) => /^payment /i.test(a));
  return Promise.all(
    payments.map(async (authorization) => {
      const credential = Credential.deserialize(authorization);
      expect(Challenge.verify(credential.challenge, { secretKey: MPPX_SECRET })).toBe(true);
      const request = credential.challenge.request as { methodDetails: { paymentHash: string } };
      const preimage = (credential.payload as { preimage: string }).preimage;
      expect(await sha256Hex(preimage)).toBe(request.methodDetails.paymentHash);
      return { credential, paymentHash: request.methodDetails.paymentHash };
    }),
  );
}

/** A real, signed invoice from some node, not the dev node's. */
function foreignInvoice(fields: { network: 'bitcoin' | 'regtest'; amountSats: number; issuedSecondsAgo?: number }) {
  const paymentHash = hex32();
  const invoice = encodeInvoice(
    {
      network: fields.network,
      amountMsat: fields.amountSats * 1000,
      timestamp: Math.floor(Date.now() / 1000) - (fields.issuedSecondsAgo ?? 0),
      expirySeconds: 600,
      paymentHash,
      paymentSecret: hex32(),
      description: 'foreign',
    },
    hex32(),
  );
  return { invoice, paymentHash };
}

const options = (extra: Partial<FetchWithL402Options> = {}): FetchWithL402Options => ({ wallet, maxPriceSats: 5, tokens: false, ...extra });

describe('fetchWithL402 pays a Payment (MPP) server built with mppx', () => {
  it('on first try with the dev wallet, within the budget; the receipt names the scheme, the challenge and the server receipt', async () => {
    const budget = createBudget({ totalSats: 5 });
    const response = await fetchWithL402(`${app.url}/mpp/weather`, undefined, { wallet: devWallet({ serviceUrl: app.url }), maxPriceSats: 5, budget });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ paid: true, path: '/mpp/weather' });
    expect(budget.spent().totalSats).toBe(2);
    expect(app.devPayments).toBe(1);

    const [sent, ...more] = await mppxReadCredentials();
    expect(more).toEqual([]);
    const receipt = getPaymentReceipt(response)!;
    expect(receipt).toMatchObject({
      scheme: 'Payment',
      offered: ['Payment'],
      amountMsat: 2000,
      paidByThisCall: true,
      paymentHash: sent!.paymentHash,
      challengeId: sent!.credential.challenge.id,
      serverReceipt: { challengeId: sent!.credential.challenge.id, reference: sent!.paymentHash, timestamp: expect.any(String) },
    });
    expect(receipt.serverReceiptProblem).toBeUndefined();
    expect(getL402Receipt(response)).toBe(receipt); // the former name reads the same receipt
  });

  it('reports audit events for a Payment challenge as for L402: received, paid, served; and a refusal of methods it does not pay', async () => {
    const events: L402Event[] = [];
    const response = await fetchWithL402(`${app.url}/mpp/weather`, undefined, options({ onEvent: (event) => void events.push(event) }));
    expect(response.status).toBe(200);
    const paymentHash = getPaymentReceipt(response)!.paymentHash;
    expect(events.map((e) => e.type.split('.').slice(-2).join('.'))).toEqual(['challenge.received', 'payment.sent', 'request.served']);
    expect(events.every((e) => e.data.payment?.paymentHash === paymentHash)).toBe(true);
    events.length = 0;
    app.script = () =>
      new Response(null, { status: 402, headers: { 'www-authenticate': 'Payment id="x", realm="r", method="tempo", intent="charge", request="e30"' } });
    expect((await refusal(fetchWithL402(`${app.url}/scripted`, undefined, options({ onEvent: (event) => void events.push(event) })))).code).toBe(
      'UNSUPPORTED_CHALLENGE',
    );
    expect(events.map((e) => [e.type.split('.').slice(-2).join('.'), e.data.reason])).toEqual([
      ['challenge.received', undefined],
      ['invoice.refused', 'UNSUPPORTED_CHALLENGE'],
    ]);
  });

  it('never keeps a charge credential for reuse: the next call pays a fresh challenge', async () => {
    const tokens = createTokenStore();
    const first = await fetchWithL402(`${app.url}/mpp/weather`, undefined, options({ tokens }));
    expect(first.status).toBe(200);
    expect(tokens.get(`${app.url}/mpp/weather`)).toBeUndefined();
    const second = await fetchWithL402(`${app.url}/mpp/weather`, undefined, options({ tokens }));
    expect(second.status).toBe(200);
    expect(wallet.invoices).toHaveLength(2);
    // Each request carried its own credential, for its own challenge; none was sent twice.
    const sent = await mppxReadCredentials();
    expect(sent).toHaveLength(2);
    expect(new Set(sent.map((s) => s.credential.challenge.id)).size).toBe(2);
  });
});

describe('what must not be paid is refused, and the wallet is never asked', () => {
  afterAll(() => {
    app.hostile = { invoiceFor: app.hostile.invoiceFor };
  });
  const devInvoice: InvoiceFor = async (amountSats) => {
    const created = await node.createInvoice({ amountMsat: amountSats * 1000, memo: 'hostile', expirySeconds: 600 });
    return { invoice: created.invoice, paymentHash: created.paymentHash, network: 'regtest' };
  };
  const hostile = async (setup: Partial<MppApp['hostile']>, extra: Partial<FetchWithL402Options> = {}) => {
    app.hostile = { invoiceFor: devInvoice, ...setup };
    const error = await refusal(fetchWithL402(`${app.url}/hostile`, undefined, options(extra)));
    expect(wallet.invoices).toEqual([]);
    expect(error.refused).toBe(true);
    expect(error.details).toMatchObject({ scheme: 'Payment', challengeId: expect.any(String) });
    return error;
  };

  it('an invoice above maxPriceSats, and one the budget cannot take', async () => {
    const dear = await refusal(fetchWithL402(`${app.url}/mpp/dear`, undefined, options()));
    expect(dear.code).toBe('PRICE_ABOVE_MAXIMUM');
    const budget = createBudget({ totalSats: 1 });
    const over = await refusal(fetchWithL402(`${app.url}/mpp/weather`, undefined, options({ budget })));
    expect(over.code).toBe('BUDGET_EXCEEDED');
    expect(wallet.invoices).toEqual([]);
    expect(app.authorizations).toEqual([]);
  });

  it('an invoice whose signature or checksum does not hold', async () => {
    const broken = (invoice: string) => invoice.slice(0, -1) + (invoice.endsWith('q') ? 'p' : 'q');
    const error = await hostile({
      invoiceFor: async (sats) => {
        const good = await devInvoice(sats);
        return { ...good, invoice: broken(good.invoice) };
      },
    });
    expect(error.code).toBe('INVOICE_INVALID');
  });

  it('an invoice for another network (mainnet, said so in the challenge)', async () => {
    const error = await hostile({ invoiceFor: async (sats) => ({ ...foreignInvoice({ network: 'bitcoin', amountSats: sats }), network: 'mainnet' }) });
    expect(error.code).toBe('WRONG_NETWORK');
  });

  it('convenience fields that disagree with the invoice: payment hash, network, amount', async () => {
    const wrongHash = await hostile({ invoiceFor: async (sats) => ({ ...(await devInvoice(sats)), paymentHash: hex32() }) });
    expect(wrongHash.code).toBe('CHALLENGE_INVOICE_MISMATCH');
    expect(wrongHash.message).toContain('payment hash');
    const wrongNetwork = await hostile({ invoiceFor: async (sats) => ({ ...(await devInvoice(sats)), network: 'signet' }) });
    expect(wrongNetwork.code).toBe('CHALLENGE_INVOICE_MISMATCH');
    expect(wrongNetwork.message).toContain('network signet');
    // No network named means mainnet (draft-lightning-charge); this invoice is regtest.
    const noNetwork = await hostile({ invoiceFor: async (sats) => ({ ...(await devInvoice(sats)), network: undefined }) as never });
    expect(noNetwork.code).toBe('CHALLENGE_INVOICE_MISMATCH');
    const wrongAmount = await hostile({ invoiceFor: async (sats) => devInvoice(sats + 1) });
    expect(wrongAmount.code).toBe('CHALLENGE_INVOICE_MISMATCH');
    expect(wrongAmount.message).toContain('amount 2 sats, the invoice asks 3');
  });

  it('expired: the challenge (its expires before the invoice expiry), and the invoice itself', async () => {
    const challengeExpired = await hostile({ expires: new Date(Date.now() - 60_000) });
    expect(challengeExpired.code).toBe('INVOICE_EXPIRED');
    expect(challengeExpired.message).toContain('the Payment challenge expired');
    const invoiceExpired = await hostile({
      invoiceFor: async (sats) => ({ ...foreignInvoice({ network: 'regtest', amountSats: sats, issuedSecondsAgo: 1200 }), network: 'regtest' }),
    });
    expect(invoiceExpired.code).toBe('INVOICE_EXPIRED');
    expect(invoiceExpired.message).toContain('the invoice expired');
  });
});

describe('a server offering both schemes', () => {
  it('is paid once, with L402 by default', async () => {
    const response = await fetchWithL402(`${app.url}/both`, undefined, options());
    expect(response.status).toBe(200);
    expect(wallet.invoices).toHaveLength(1);
    expect(app.authorizations).toHaveLength(1);
    expect(app.authorizations[0]).toMatch(/^L402 /);
    expect(getPaymentReceipt(response)).toMatchObject({ scheme: 'L402', offered: ['L402', 'Payment'], amountMsat: 2000 });
    expect(getPaymentReceipt(response)!.challengeId).toBeUndefined();
  });

  it('a scheme option that is neither: a TypeError before anything is sent', async () => {
    await expect(fetchWithL402(`${app.url}/both`, undefined, options({ scheme: 'payment' as never }))).rejects.toThrow(
      /options.scheme must be 'L402' or 'Payment'/,
    );
    expect(app.authorizations).toEqual([]);
  });

  it("is paid once, with Payment when the caller's scheme says so; mppx verifies the credential", async () => {
    const response = await fetchWithL402(`${app.url}/both`, undefined, options({ scheme: 'Payment' }));
    expect(response.status).toBe(200);
    expect(wallet.invoices).toHaveLength(1);
    const [sent] = await mppxReadCredentials();
    expect(app.authorizations).toHaveLength(1);
    expect(getPaymentReceipt(response)).toMatchObject({
      scheme: 'Payment',
      offered: ['L402', 'Payment'],
      paymentHash: sent!.paymentHash,
      serverReceipt: { reference: sent!.paymentHash },
    });
  });
});

/** A challenge of the realm mpp.test made by mppx (its id bound with the app's secret), as a WWW-Authenticate value. */
function mppxChallenge(fields: { method: string; intent: string; request: Record<string, unknown>; expires?: string }): string {
  return Challenge.serialize(Challenge.from({ realm: 'mpp.test', ...fields, secretKey: MPPX_SECRET } as Parameters<typeof Challenge.from>[0]));
}

describe('methods and intents this client does not pay', () => {
  const inTenMinutes = () => new Date(Date.now() + 600_000).toISOString();
  const tempo = mppxChallenge({
    method: 'tempo',
    intent: 'charge',
    request: { amount: '1000', currency: '0x20c0000000000000000000000000000000000000', recipient: '0x742d35Cc6634C0532925a3b844Bc9e7595f8fE00' },
    expires: inTenMinutes(),
  });
  const session = mppxChallenge({ method: 'lightning', intent: 'session', request: { amount: '2', currency: 'sat' }, expires: inTenMinutes() });

  it('a 402 with only those: a clear error naming them, nothing paid', async () => {
    app.script = () =>
      new Response('{}', {
        status: 402,
        headers: [
          ['www-authenticate', tempo],
          ['www-authenticate', session],
        ],
      });
    const error = await refusal(fetchWithL402(`${app.url}/scripted`, undefined, options()));
    expect(error.code).toBe('UNSUPPORTED_CHALLENGE');
    expect(error.refused).toBe(true);
    expect(error.details.unsupported).toEqual(['tempo/charge', 'lightning/session']);
    expect(error.message).toContain('tempo/charge, lightning/session');
    expect(wallet.invoices).toEqual([]);
    expect(app.authorizations).toEqual([]);
  });

  it('beside a Lightning charge: ignored, the charge is paid', async () => {
    const charge = await fetch(`${app.url}/mpp/weather`);
    const offered = charge.headers.get('www-authenticate')!;
    app.script = (request) =>
      request.headers.get('authorization')
        ? fetch(`${app.url}/mpp/weather`, { headers: request.headers })
        : new Response(null, {
            status: 402,
            headers: [
              ['www-authenticate', tempo],
              ['www-authenticate', offered],
              ['www-authenticate', session],
            ],
          });
    const response = await fetchWithL402(`${app.url}/scripted`, undefined, options());
    expect(response.status).toBe(200);
    expect(wallet.invoices).toHaveLength(1);
    expect(getPaymentReceipt(response)).toMatchObject({ scheme: 'Payment', offered: ['Payment'], serverReceipt: { reference: expect.any(String) } });
  });
});

describe("the server's Payment-Receipt is checked against the payment", () => {
  it('a receipt for another payment hash is not taken, and says why', async () => {
    const ring = BindingKeyring.fromSecrets('scripted-server-secret-0123456789abcdef');
    const created = await node.createInvoice({ amountMsat: 2000, memo: 'scripted', expirySeconds: 600 });
    const challenge = lightningChargeChallenge(ring, {
      realm: 'scripted',
      invoice: created.invoice,
      paymentHash: created.paymentHash,
      amountSats: 2,
      network: 'regtest',
      expires: new Date(created.expiresAt * 1000),
    });
    app.script = (request) =>
      request.headers.get('authorization')
        ? Response.json(
            { ok: true },
            { headers: { 'payment-receipt': formatReceipt({ challengeId: challenge.id, paymentHash: hex32(), settledAt: new Date() }) } },
          )
        : new Response(null, { status: 402, headers: { 'www-authenticate': formatChallenge(challenge) } });
    const response = await fetchWithL402(`${app.url}/scripted`, undefined, options());
    expect(response.status).toBe(200);
    const receipt = getPaymentReceipt(response)!;
    expect(receipt).toMatchObject({ scheme: 'Payment', paymentHash: created.paymentHash, challengeId: challenge.id });
    expect(receipt.serverReceipt).toBeUndefined();
    expect(receipt.serverReceiptProblem).toMatch(/for another payment/);
  });
});

describe('l402-paywall <url> (the command line, a child process)', () => {
  it('pays the mppx server with --dev: body on stdout; scheme, challenge id and receipt on stderr', async () => {
    const { code, stdout, stderr } = await runBin([`${app.url}/mpp/weather`, '--dev', app.url, '--max-sats', '5']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ paid: true, path: '/mpp/weather' });
    const [sent] = await mppxReadCredentials();
    const id = sent!.credential.challenge.id;
    expect(stderr).toContain(`paid 2 sats (routing fee 0 sats) with dev wallet of ${app.url}`);
    expect(stderr).toContain(
      `payment hash ${sent!.paymentHash}; HTTP 200; scheme Payment (offered: Payment), challenge id ${id}; Payment-Receipt: challenge ${id}, payment hash ${sent!.paymentHash}, at `,
    );
    expect(app.devPayments).toBe(1);
  });

  it('a server offering both: L402 by default, Payment with --scheme payment; one payment each', async () => {
    const byDefault = await runBin([`${app.url}/both`, '--dev', app.url, '--max-sats', '5']);
    expect(byDefault.code).toBe(0);
    expect(byDefault.stderr).toContain('HTTP 200; scheme L402 (offered: L402, Payment)');
    expect(app.authorizations.map((a) => a.split(' ')[0])).toEqual(['L402']);
    const asked = await runBin([`${app.url}/both`, '--dev', app.url, '--max-sats', '5', '--scheme', 'payment']);
    expect(asked.code).toBe(0);
    expect(asked.stderr).toContain('HTTP 200; scheme Payment (offered: L402, Payment), challenge id ');
    expect(app.authorizations.map((a) => a.split(' ')[0])).toEqual(['L402', 'Payment']);
    expect(app.devPayments).toBe(2);
    const bad = await runBin([`${app.url}/both`, '--dev', app.url, '--scheme', 'bolt12']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--scheme must be l402 or payment');
  });

  it('refuses above --max-sats and unknown methods: exit 3, nothing paid', async () => {
    const dear = await runBin([`${app.url}/mpp/dear`, '--dev', app.url, '--max-sats', '5']);
    expect(dear.code).toBe(3);
    expect(dear.stderr).toContain('[PRICE_ABOVE_MAXIMUM]');
    const tempoOnly = mppxChallenge({ method: 'tempo', intent: 'charge', request: { amount: '1', currency: 'usd' } });
    app.script = () => new Response(null, { status: 402, headers: { 'www-authenticate': tempoOnly } });
    const unknown = await runBin([`${app.url}/scripted`, '--dev', app.url]);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain('tempo/charge');
    expect(unknown.stderr).toContain('[UNSUPPORTED_CHALLENGE]');
    expect(app.devPayments).toBe(0);
  });

  it('--help says which schemes it pays and names --scheme', async () => {
    const help = await runBin(['--help']);
    expect(help.stdout).toContain('--scheme');
    expect(help.stdout).toContain('Payment challenge');
    const mcpHelp = await runBin(['mcp', '--help']);
    expect(mcpHelp.stdout).toContain('--scheme');
    expect(mcpHelp.stdout).toContain('"Payment"');
  });
});

describe('l402-paywall mcp (through the MCP SDK client)', () => {
  let agent: McpBin;
  const call = (args: Record<string, unknown>) => agent.call('call_paid_api', args);
  const json = toolJson;

  beforeAll(async () => {
    agent = await connectMcpBin('mpp-test-agent', ['--dev', app.url, '--max-sats', '5', '--budget-sats', '6']);
  });
  afterAll(() => agent?.close());

  it('pays the mppx server and reports scheme and receipt; L402 or Payment on a server offering both; refusals within the budget', async () => {
    const paid = await call({ url: `${app.url}/mpp/weather` });
    expect(paid.isError).toBeFalsy();
    const result = json(paid);
    const [sent] = await mppxReadCredentials();
    const id = sent!.credential.challenge.id;
    expect(result).toMatchObject({
      status: 200,
      sats_paid: 2,
      payment_hash: sent!.paymentHash,
      scheme: 'Payment',
      schemes_offered: ['Payment'],
      challenge_id: id,
      receipt: { challenge_id: id, payment_hash: sent!.paymentHash, timestamp: expect.any(String) },
      session_spent_sats: 2,
      session_budget_left_sats: 4,
    });
    expect((result.headers as Record<string, string>)['payment-receipt']).toEqual(expect.any(String));
    expect(paid.structuredContent).toEqual(result);

    expect(json(await call({ url: `${app.url}/both` }))).toMatchObject({ status: 200, sats_paid: 2, scheme: 'L402', schemes_offered: ['L402', 'Payment'] });
    expect(json(await call({ url: `${app.url}/both`, scheme: 'Payment' }))).toMatchObject({ status: 200, sats_paid: 2, scheme: 'Payment' });
    expect(app.devPayments).toBe(3);

    const over = await call({ url: `${app.url}/mpp/weather` });
    expect(over.isError).toBe(true);
    expect(json(over)).toMatchObject({ code: 'BUDGET_EXCEEDED', refused: true });
    const dear = await call({ url: `${app.url}/mpp/dear` });
    expect(json(dear)).toMatchObject({ code: 'PRICE_ABOVE_MAXIMUM', refused: true, scheme: 'Payment' });
    expect(app.devPayments).toBe(3);
  });
});
