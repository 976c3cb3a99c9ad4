// The Lightning session intent's codecs (src/schemes/session/codec.ts,
// draft-lightning-session-00): the challenge a server writes (bound by the
// same HMAC id as the charge intent), the offer a client reads from it, the
// four credential actions parsed and verified, and the receipt. Invoices from
// the real dev Lightning node. mppx 0.11.0 has no Lightning method (its only
// session intent is Tempo's), so it is checked as a generic Payment parser:
// it reads our session challenge and credentials field for field.
import { Challenge, Credential } from 'mppx';
import { describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { encodeInvoice } from 'l402-paywall/lightning';
import {
  BindingKeyring,
  checkReturnInvoice,
  formatChallenge,
  formatSessionCredential,
  parsePaymentChallenges,
  parseSessionCredential,
  readLightningSession,
  sessionChallenge,
  sessionReceipt,
  verifySessionCredential,
  type PaymentChallenge,
} from '../../src/mpp.js';
import { decodeBase64, encodeJson, parseJsonBytes } from '../../src/schemes/payment/wire.js';
import { newPreimage } from '../support/l402.js';

const SECRET = 'session-codec-test-secret-0123456789abcdef0123';
const ring = BindingKeyring.fromSecrets(SECRET);
const store = memoryDevNodeStore();
const server = createDevNode({ store });
const wallet = createDevNode({ store });
const NOW = Math.floor(Date.now() / 1000);

/** The session every offer here makes, and what a client reads back of it (with the deposit's invoice and payment hash). */
const TERMS = { unitPriceSats: 2, depositSats: 40, idleTimeoutSeconds: 300, description: 'LLM token stream', unitType: 'chunk' };

async function offered(options: { expiresIn?: number } = {}) {
  const deposit = await server.createInvoice({ amountMsat: 40_000, memo: 'session deposit' });
  const challenge = sessionChallenge(ring, {
    realm: 'api.example.com',
    ...TERMS,
    depositInvoice: deposit.invoice,
    paymentHash: deposit.paymentHash,
    expires: new Date((NOW + (options.expiresIn ?? 600)) * 1000),
    binding: { route: '/generate' },
  });
  return { challenge, deposit };
}

const requestJson = (challenge: PaymentChallenge) => parseJsonBytes(decodeBase64(challenge.request)!) as Record<string, string>;

describe('sessionChallenge', () => {
  it('writes the draft fields, flat, bound under the HMAC id like a charge', async () => {
    const { challenge, deposit } = await offered();
    expect(challenge).toMatchObject({ realm: 'api.example.com', method: 'lightning', intent: 'session', opaque: encodeJson({ route: '/generate' }) });
    expect(requestJson(challenge)).toEqual({
      amount: '2',
      currency: 'sat',
      description: 'LLM token stream',
      unitType: 'chunk',
      depositInvoice: deposit.invoice,
      paymentHash: deposit.paymentHash,
      depositAmount: '40',
      idleTimeout: '300',
    });
    const { id, description: _d, ...bound } = challenge;
    expect(ring.verify(id, bound)).toBe(true);
    expect(ring.verify(id, { ...bound, intent: 'charge' })).toBe(false);
  });

  it('refuses a deposit below one unit, and options that cannot be written', async () => {
    const deposit = await server.createInvoice({ amountMsat: 1000 });
    const base = {
      realm: 'r',
      unitPriceSats: 2,
      depositInvoice: deposit.invoice,
      paymentHash: deposit.paymentHash,
      idleTimeoutSeconds: 60,
      expires: new Date(),
    };
    expect(() => sessionChallenge(ring, { ...base, depositSats: 1 })).toThrow(TypeError);
    expect(() => sessionChallenge(ring, { ...base, depositSats: 2, idleTimeoutSeconds: 0 })).toThrow(TypeError);
    expect(() => sessionChallenge(ring, { ...base, depositSats: 2, realm: 'a|b' })).toThrow(TypeError);
  });

  it('is read back by a client, from the header, and by mppx', async () => {
    const { challenge, deposit } = await offered();
    const header = formatChallenge(challenge);
    const [read] = parsePaymentChallenges(header).challenges;
    expect(read).toEqual(challenge);
    expect(readLightningSession(read!)).toEqual({
      ok: true,
      session: { challenge, ...TERMS, depositInvoice: deposit.invoice, paymentHash: deposit.paymentHash, expiresAt: NOW + 600 },
    });
    const mppx = Challenge.deserialize(header);
    expect(mppx).toMatchObject({ id: challenge.id, realm: 'api.example.com', method: 'lightning', intent: 'session' });
    expect(mppx.request).toEqual(requestJson(challenge));
    expect(readLightningSession({ ...challenge, intent: 'charge' })).toMatchObject({ ok: false });
  });
});

describe('session credentials', () => {
  it('open: the deposit preimage and an amountless return invoice on its network verify', async () => {
    const { challenge, deposit } = await offered();
    const { preimage } = await wallet.pay(deposit.invoice);
    const returnInvoice = (await wallet.createAmountlessInvoice({ memo: 'refund', expirySeconds: 86_400 })).invoice;
    const authorization = formatSessionCredential(challenge, { action: 'open', preimage: preimage.toUpperCase(), returnInvoice });
    expect(verifySessionCredential(ring, authorization, NOW)).toMatchObject({
      ok: true,
      action: 'open',
      sessionId: deposit.paymentHash,
      paidHash: deposit.paymentHash,
      paidSats: 40,
      unitPriceSats: 2,
      returnInvoice,
      network: 'regtest',
      binding: { route: '/generate' },
    });
    // mppx reads the credential we write, and we read one it writes.
    const mppx = Credential.deserialize(authorization);
    expect(mppx.payload).toEqual({ action: 'open', preimage, returnInvoice });
    const theirs = Credential.serialize({ challenge: Challenge.deserialize(formatChallenge(challenge)), payload: { action: 'open', preimage, returnInvoice } });
    expect(verifySessionCredential(ring, theirs, NOW)).toMatchObject({ ok: true, action: 'open' });
  });

  it('open: refused with the wrong preimage, an expired challenge, or a return invoice with an amount or on another network', async () => {
    const { challenge, deposit } = await offered();
    const { preimage } = await wallet.pay(deposit.invoice);
    const returnInvoice = (await wallet.createAmountlessInvoice({})).invoice;
    const open = (p: string, r = returnInvoice) => formatSessionCredential(challenge, { action: 'open', preimage: p, returnInvoice: r });
    expect(verifySessionCredential(ring, open(newPreimage().preimage), NOW)).toMatchObject({ ok: false, problem: 'lightning/invalid-preimage' });
    expect(verifySessionCredential(ring, open(preimage), NOW + 601)).toMatchObject({ ok: false, problem: 'lightning/challenge-expired' });
    const priced = (await wallet.createInvoice({ amountMsat: 5000 })).invoice;
    expect(verifySessionCredential(ring, open(preimage, priced), NOW)).toMatchObject({ ok: false, problem: 'lightning/invalid-return-invoice' });
    const elsewhere = encodeInvoice(
      { network: 'bitcoin', timestamp: NOW, paymentHash: newPreimage().hash, paymentSecret: newPreimage().hash, description: 'refund' },
      '11'.repeat(32),
    );
    expect(elsewhere.startsWith('lnbc1')).toBe(true);
    expect(checkReturnInvoice(elsewhere, 'mainnet')).toBeUndefined();
    expect(verifySessionCredential(ring, open(preimage, elsewhere), NOW)).toMatchObject({ ok: false, detail: expect.stringMatching(/network/) });
    // A changed character breaks the bech32 checksum.
    const broken = returnInvoice.slice(0, -1) + (returnInvoice.endsWith('q') ? 'p' : 'q');
    expect(verifySessionCredential(ring, open(preimage, broken), NOW)).toMatchObject({ ok: false, problem: 'lightning/invalid-return-invoice' });
  });

  it('bearer and close: the challenge the session was opened with, and the preimage of the session id; the challenge may have expired', async () => {
    const { challenge, deposit } = await offered();
    const { preimage } = await wallet.pay(deposit.invoice);
    const sessionId = deposit.paymentHash;
    const later = (await offered()).challenge;
    for (const action of ['bearer', 'close'] as const) {
      const good = formatSessionCredential(challenge, { action, sessionId, preimage });
      expect(verifySessionCredential(ring, good, NOW + 10_000)).toMatchObject({ ok: true, action, sessionId });
      const bad = formatSessionCredential(challenge, { action, sessionId, preimage: newPreimage().preimage });
      expect(verifySessionCredential(ring, bad, NOW)).toMatchObject({ ok: false, problem: 'lightning/invalid-preimage' });
      // The session's id and preimage (what a routing node of the deposit learns) with any other challenge of ours: refused.
      const other = formatSessionCredential(later, { action, sessionId, preimage });
      expect(verifySessionCredential(ring, other, NOW)).toMatchObject({ ok: false, problem: 'invalid-challenge' });
    }
  });

  it('topUp: the preimage of the fresh challenge’s deposit, credited to the named session', async () => {
    const { challenge, deposit } = await offered();
    const { preimage } = await wallet.pay(deposit.invoice);
    const sessionId = newPreimage().hash;
    const topUp = formatSessionCredential(challenge, { action: 'topUp', sessionId, topUpPreimage: preimage });
    expect(verifySessionCredential(ring, topUp, NOW)).toMatchObject({ ok: true, action: 'topUp', sessionId, paidHash: deposit.paymentHash, paidSats: 40 });
    const wrong = formatSessionCredential(challenge, { action: 'topUp', sessionId, topUpPreimage: newPreimage().preimage });
    expect(verifySessionCredential(ring, wrong, NOW)).toMatchObject({ ok: false, problem: 'lightning/invalid-preimage' });
  });

  it('refuses a changed challenge, another server’s, another intent, and malformed payloads', async () => {
    const { challenge } = await offered();
    const s = newPreimage();
    const bearer = (c: PaymentChallenge) => formatSessionCredential(c, { action: 'bearer', sessionId: s.hash, preimage: s.preimage });
    expect(verifySessionCredential(ring, bearer({ ...challenge, realm: 'evil.example' }), NOW)).toMatchObject({ problem: 'lightning/unknown-challenge' });
    expect(verifySessionCredential(BindingKeyring.fromSecrets('another-secret-0123456789abcdef0123456789'), bearer(challenge), NOW)).toMatchObject({
      problem: 'lightning/unknown-challenge',
    });
    expect(verifySessionCredential(ring, bearer({ ...challenge, intent: 'charge' }), NOW)).toMatchObject({ problem: 'method-unsupported' });
    const raw = (payload: unknown) => `Payment ${encodeJson({ challenge, payload })}`;
    for (const payload of [{ action: 'bearer', sessionId: s.hash }, { action: 'refund', preimage: s.preimage }, { action: 'open', preimage: s.preimage }, 'x'])
      expect(parseSessionCredential(raw(payload))).toMatchObject({ ok: false, problem: 'lightning/malformed-credential' });
    // Unknown fields are ignored.
    expect(parseSessionCredential(raw({ action: 'bearer', sessionId: s.hash, preimage: s.preimage, extra: 1 }))).toMatchObject({
      ok: true,
      credential: { payload: { action: 'bearer', sessionId: s.hash, preimage: s.preimage } },
    });
    expect(() => formatSessionCredential(challenge, { action: 'bearer', sessionId: 'x', preimage: s.preimage })).toThrow(TypeError);
  });
});

describe('sessionReceipt', () => {
  it('names the session as the reference; close adds refundSats and refundStatus', () => {
    const sessionId = newPreimage().hash;
    const read = (r: string) => parseJsonBytes(decodeBase64(r)!);
    expect(read(sessionReceipt({ challengeId: 'c1', sessionId, at: 1_800_000_000 }))).toEqual({
      challengeId: 'c1',
      method: 'lightning',
      reference: sessionId,
      status: 'success',
      timestamp: '2027-01-15T08:00:00Z',
    });
    expect(read(sessionReceipt({ challengeId: 'c1', sessionId, at: 1_800_000_000, refund: { refundSats: 140, refundStatus: 'succeeded' } }))).toMatchObject({
      refundSats: 140,
      refundStatus: 'succeeded',
    });
  });
});
