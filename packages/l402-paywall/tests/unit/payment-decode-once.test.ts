// A Payment credential is decoded once per request (issue 36): the session's
// and the charge's intents share one reading of the Authorization value
// (core/scheme.ts Presented), so neither a session action nor a charge beside
// sessions decodes it twice, and no reading is kept from one request for the
// next (a module-level cache would let the second of two identical requests
// skip its decode: it must not). A decode is counted as JSON.parse of the
// credential's own JSON text, which every reading of it goes through.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { withL402 } from 'l402-paywall';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { formatCredential, formatSessionCredential, parsePaymentChallenges, readLightningCharge, readLightningSession } from 'l402-paywall/mpp';
import { lightningSessions, memorySessionLedger } from 'l402-paywall/sessions';

const SECRET = 'payment-decode-once-secret-0123456789abcdef0123';

/** base64url (as a credential carries it) to the UTF-8 text it encodes. */
const decodeBase64Text = (text: string) => Buffer.from(text, 'base64url').toString('utf8');

function shop() {
  const net = memoryDevNodeStore();
  const server = createDevNode({ store: net });
  const wallet = createDevNode({ store: net });
  const handler = withL402(async () => Response.json({ ok: true }), {
    priceSats: 3,
    provider: server,
    secret: SECRET,
    session: lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger() }),
  });
  const get = (authorization?: string) => handler(new Request('https://shop.example/thing', { headers: authorization ? { authorization } : {} }));
  const challenges = async () => {
    const response = await get();
    expect(response.status).toBe(402);
    return parsePaymentChallenges(response.headers.get('www-authenticate')).challenges;
  };
  return { wallet, get, challenges };
}

/** How many times JSON.parse read `authorization`'s credential while `run` ran. */
async function decodesOf(authorization: string, run: () => Promise<Response>): Promise<{ decodes: number; response: Response }> {
  const text = decodeBase64Text(authorization.slice('Payment '.length));
  const parse = vi.spyOn(JSON, 'parse');
  try {
    const response = await run();
    return { decodes: parse.mock.calls.filter(([input]) => input === text).length, response };
  } finally {
    parse.mockRestore();
  }
}

afterEach(() => vi.restoreAllMocks());

describe('a Payment credential is decoded once per request', () => {
  it('each session action: open, bearer (twice, the same value), topUp and close', async () => {
    const { wallet, get, challenges } = shop();
    const offer = readLightningSession((await challenges()).find((c) => c.intent === 'session')!);
    if (!offer.ok) throw new Error(offer.detail);
    const { preimage } = await wallet.pay(offer.session.depositInvoice);
    const returned = await wallet.createAmountlessInvoice({ memo: 'refund', expirySeconds: 86_400 });
    const challenge = offer.session.challenge;
    const sessionId = offer.session.paymentHash;

    const open = formatSessionCredential(challenge, { action: 'open', preimage, returnInvoice: returned.invoice });
    const opened = await decodesOf(open, () => get(open));
    expect(opened.response.status).toBe(200);
    expect(opened.decodes).toBe(1);

    const bearer = formatSessionCredential(challenge, { action: 'bearer', sessionId, preimage });
    for (let i = 0; i < 2; i++) {
      const spent = await decodesOf(bearer, () => get(bearer));
      expect(spent.response.status).toBe(200);
      expect(spent.decodes).toBe(1);
    }

    const topUpOffer = readLightningSession((await challenges()).find((c) => c.intent === 'session')!);
    if (!topUpOffer.ok) throw new Error(topUpOffer.detail);
    const topUpPaid = await wallet.pay(topUpOffer.session.depositInvoice);
    const topUp = formatSessionCredential(topUpOffer.session.challenge, { action: 'topUp', sessionId, topUpPreimage: topUpPaid.preimage });
    const toppedUp = await decodesOf(topUp, () => get(topUp));
    expect(toppedUp.response.status).toBe(200);
    expect(toppedUp.decodes).toBe(1);

    const close = formatSessionCredential(challenge, { action: 'close', sessionId, preimage });
    const closed = await decodesOf(close, () => get(close));
    expect(closed.response.status).toBe(200);
    expect(closed.decodes).toBe(1);
  });

  it('a charge credential on a route that also sells sessions', async () => {
    const { wallet, get, challenges } = shop();
    const charge = readLightningCharge((await challenges()).find((c) => c.intent === 'charge')!);
    if (!charge.ok) throw new Error(charge.detail);
    const { preimage } = await wallet.pay(charge.charge.invoice);
    const credential = formatCredential(charge.charge.challenge, preimage);
    const paid = await decodesOf(credential, () => get(credential));
    expect(paid.response.status).toBe(200);
    expect(paid.decodes).toBe(1);
  });
});
