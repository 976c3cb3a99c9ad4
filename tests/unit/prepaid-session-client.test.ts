// The landing page's prepaid session client (public/prepaid-session.js:
// plain browser JavaScript, no library code) read and written as the
// library reads and writes the same things: the session challenge among a
// 402's other challenges, the four credentials, the return invoice check,
// a preimage pasted from a wallet checked as the server checks it, and a
// metered Server-Sent Events body cut anywhere.
import { createDevNode } from 'l402-paywall/backends';
import { describe, expect, it } from 'vitest';
import {
  BindingKeyring,
  checkReturnInvoice,
  formatChallenge,
  lightningChargeChallenge,
  parsePaymentChallenges,
  parseSessionCredential,
  sessionChallenge,
  type PaymentChallenge,
  type SessionPayload,
} from 'l402-paywall/mpp';
import { sseEvent } from '../../packages/l402-paywall/tests/support/sse.js';

/**
 * The page's module, as these tests use it. It is plain JavaScript, type-checked with the pages
 * (tsconfig.pages.json) from its JSDoc; the tests' compiler settings do not read JavaScript, so
 * its shape is stated here and it is imported by URL.
 */
interface PageSessionClient {
  parseAuthenticate(header: string): { scheme: string; params: Map<string, string> }[];
  readSessionOffer(header: string | null): ({ request: string } & Record<string, unknown>) | undefined;
  sessionCredential(challenge: PaymentChallenge, payload: SessionPayload): string;
  returnInvoiceProblem(invoice: string, depositInvoice: string): string;
  preimageProblem(preimage: string, paymentHash: string): Promise<string>;
  serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }>;
}
const { parseAuthenticate, preimageProblem, readSessionOffer, returnInvoiceProblem, serverSentEvents, sessionCredential } = (await import(
  new URL('../../public/prepaid-session.js', import.meta.url).href
)) as PageSessionClient;

const keyring = BindingKeyring.fromSecrets('prepaid-session-client-secret-0123456789abcdef');
const node = createDevNode();
const HASH = 'ab'.repeat(32);
const expires = new Date(Date.now() + 3_600_000);

async function offered() {
  const deposit = await node.createInvoice({ amountMsat: 20_000, memo: 'deposit' });
  const charge = await node.createInvoice({ amountMsat: 1_000, memo: 'charge' });
  const session = {
    ...sessionChallenge(keyring, {
      realm: 'demo.example, "quoted"',
      unitPriceSats: 1,
      depositInvoice: deposit.invoice,
      paymentHash: deposit.paymentHash,
      depositSats: 20,
      idleTimeoutSeconds: 300,
      unitType: 'chunk',
      expires,
      binding: { route: '/api/demo/stream' },
    }),
    // Unbound, shown to the payer: commas, quotes and a backslash, escaped in the header.
    description: 'twenty sats, then "one" per chunk \\ top up',
  };
  const chargeChallenge = lightningChargeChallenge(keyring, {
    realm: 'demo.example',
    invoice: charge.invoice,
    paymentHash: charge.paymentHash,
    amountSats: 1,
    network: 'regtest',
    expires,
  });
  // As the paywall sends them, joined in one value: an L402 token68 (padded) with parameters, the charge, the session.
  const header = `L402 bWFjYXJvb24=, invoice="${charge.invoice}", L402 macaroon="a,b", ${formatChallenge(chargeChallenge)}, ${formatChallenge(session)}`;
  return { header, session, deposit };
}

describe("the landing page's session client", () => {
  it('reads the session challenge of a 402 as the library does, among L402 and charge challenges, with its figures', async () => {
    const { header, session, deposit } = await offered();
    const library = parsePaymentChallenges(header);
    expect(library.refusals).toEqual([]);
    expect(library.challenges.find((challenge) => challenge.intent === 'session')).toEqual(session);
    expect(parseAuthenticate(header).map(({ scheme }) => scheme)).toContain('L402');

    const offer = readSessionOffer(header);
    expect(offer).toMatchObject({
      challenge: session,
      unitPriceSats: 1,
      unitType: 'chunk',
      depositSats: 20,
      depositInvoice: deposit.invoice,
      paymentHash: deposit.paymentHash,
      idleTimeoutSeconds: 300,
      expiresAt: session.expires,
    });
    expect(JSON.parse(offer!.request)).toMatchObject({ amount: '1', depositAmount: '20', currency: 'sat' });
    // None offered, or one the page cannot read: nothing.
    expect(readSessionOffer(formatChallenge(library.challenges[0]!))).toBeUndefined();
    expect(readSessionOffer(formatChallenge({ ...session, request: 'bm90IGpzb24' }))).toBeUndefined();
    expect(readSessionOffer(null)).toBeUndefined();
    expect(readSessionOffer('Payment "unterminated')).toBeUndefined();
  });

  it('writes each of the four credentials so the library reads back the same challenge and payload', async () => {
    const { session } = await offered();
    const returnInvoice = (await node.createAmountlessInvoice({ memo: 'refunds' })).invoice;
    const payloads: SessionPayload[] = [
      { action: 'open', preimage: HASH, returnInvoice },
      { action: 'bearer', sessionId: HASH, preimage: HASH },
      { action: 'topUp', sessionId: HASH, topUpPreimage: HASH },
      { action: 'close', sessionId: HASH, preimage: HASH },
    ];
    for (const payload of payloads) {
      const authorization = sessionCredential(session, payload);
      expect(authorization).toMatch(/^Payment [A-Za-z0-9_-]+$/);
      expect(parseSessionCredential(authorization)).toEqual({ ok: true, credential: { challenge: session, payload } });
    }
  });

  it('checks a return invoice as the server will: BOLT 11, its checksum, the deposit’s network, no amount', async () => {
    const { deposit } = await offered();
    const amountless = (await node.createAmountlessInvoice({ memo: 'refunds' })).invoice;
    const candidates = {
      amountless,
      'amountless, upper case': amountless.toUpperCase(),
      'with an amount': deposit.invoice,
      'a changed character': amountless.slice(0, -10) + (amountless.at(-10) === 'q' ? 'p' : 'q') + amountless.slice(-9),
      'mixed case': amountless.slice(0, 20).toUpperCase() + amountless.slice(20),
      'not an invoice': 'hello',
    };
    for (const [name, invoice] of Object.entries(candidates)) {
      const page = returnInvoiceProblem(invoice, deposit.invoice);
      const server = checkReturnInvoice(invoice, 'regtest');
      expect(page === '', `${name}: the page accepts it exactly when the server does (${server ?? 'accepted'})`).toBe(server === undefined);
    }
    expect(returnInvoiceProblem(amountless, deposit.invoice)).toBe('');
    expect(returnInvoiceProblem(`lightning:${amountless}`, deposit.invoice)).toBe('');
    expect(returnInvoiceProblem(deposit.invoice, deposit.invoice)).toMatch(/names an amount/);
    expect(returnInvoiceProblem('', deposit.invoice)).toMatch(/^Paste an invoice/);
    // The same invoice against a deposit on another network.
    expect(returnInvoiceProblem(amountless, `lnbc1${deposit.invoice.slice('lnbcrt1'.length)}`)).toMatch(/another network/);
  });

  it("checks a preimage pasted from a wallet as the server will: 64 hex digits whose SHA-256 is the invoice's payment hash", async () => {
    const { deposit } = await offered();
    const { preimage } = await node.pay(deposit.invoice);
    expect(await preimageProblem(preimage, deposit.paymentHash)).toBe('');
    expect(await preimageProblem(`  ${preimage.toUpperCase()}\n`, deposit.paymentHash)).toBe('');
    expect(await preimageProblem('', deposit.paymentHash)).toMatch(/^Paste the preimage/);
    expect(await preimageProblem(preimage.slice(1), deposit.paymentHash)).toMatch(/64 hexadecimal digits/);
    expect(await preimageProblem(`${preimage.slice(0, -1)}g`, deposit.paymentHash)).toMatch(/64 hexadecimal digits/);
    // Another payment's preimage, or the payment hash itself pasted by mistake: not this invoice's.
    expect(await preimageProblem(HASH, deposit.paymentHash)).toMatch(/not this invoice's preimage/);
    expect(await preimageProblem(deposit.paymentHash, deposit.paymentHash)).toMatch(/not this invoice's preimage/);
  });

  it("reads a metered stream's events whatever the network cuts it into, multi-byte characters and CRLF included", async () => {
    const events: [string | undefined, string][] = [
      [undefined, JSON.stringify({ chunk: 1, of: 2, word: 'Zahlung' })],
      ['payment-need-topup', JSON.stringify({ sessionId: HASH, balanceSpent: 20, balanceRequired: 1 })],
      [undefined, 'two lines →\nof one chunk'],
      ['payment-receipt', JSON.stringify({ spent: 2, units: 2 })],
      [undefined, '[DONE]'],
    ];
    const bytes = Buffer.concat(events.map(([name, data]) => sseEvent(name, data)));
    const expected = events.map(([name, data]) => ({ event: name ?? 'message', data }));
    for (const [text, size] of [
      [bytes, 1],
      [bytes, 3],
      [Buffer.from(bytes.toString('utf8').replace(/\n/g, '\r\n')), 2],
      [Buffer.concat([Buffer.from(': a comment\n\n'), bytes]), 7],
    ] as const) {
      const read = [];
      for await (const event of serverSentEvents(pieces(text, size))) read.push(event);
      expect(read, `in pieces of ${size} bytes`).toEqual(expected);
    }
  });

  it('hangs up when the reader stops early, so the server stops the stream', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(sseEvent(undefined, 'more'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const event of serverSentEvents(body)) if (event.data === 'more') break;
    expect(cancelled).toBe(true);
  });
});

/** `bytes` as a body arriving `size` bytes at a time. */
function pieces(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}
