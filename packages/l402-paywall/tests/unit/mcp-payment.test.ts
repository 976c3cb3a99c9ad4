// The Payment scheme's JSON-RPC transport as the client reads it
// (src/client/mcp-payment.ts): a challenge carried as a JSON object is the
// same challenge as in a header (its request re-encoded as the base64url JCS
// text its id binds: mppx's header form of it reads the same), hostile
// challenge lists are read within bounds, and a receipt is taken only for the
// payment and challenge it names.
import { Challenge } from 'mppx';
import { describe, expect, it } from 'vitest';
import { paymentRequired, toolChallenges, toolReceipt } from '../../src/client/mcp-payment.js';
import { parsePaymentChallenges } from '../../src/schemes/payment/challenge.js';

const INVOICE = 'lnbcrt20n1p0000000pp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqs';
const HASH = '0'.repeat(64);

const mppxChallenge = (request: Record<string, unknown>, method = 'lightning') =>
  Challenge.from({
    realm: 'tools.test',
    method,
    intent: 'charge',
    request,
    expires: new Date(Date.now() + 60_000).toISOString(),
    secretKey: 'a-secret-for-the-test-0123456789',
  });

describe('challenges in JSON-RPC', () => {
  it('a JSON challenge is the header challenge: the same request text, which the id binds', () => {
    const challenge = mppxChallenge({ amount: '2', currency: 'sat', methodDetails: { invoice: INVOICE, paymentHash: HASH, network: 'regtest' } });
    const read = toolChallenges({ challenges: [challenge] });
    expect(read.unsupported).toEqual([]);
    expect(read.offers).toHaveLength(1);
    const [fromHeader] = parsePaymentChallenges(Challenge.serialize(challenge)).challenges;
    expect(read.offers[0]!.charge.challenge).toEqual(fromHeader);
    expect(read.offers[0]!.charge).toMatchObject({ amountSats: 2, invoice: INVOICE, paymentHash: HASH, network: 'regtest' });
    // The credential echoes the object as the server sent it.
    expect(read.echoes.get(read.offers[0]!)).toBe(challenge);
  });

  it('other methods, malformed ones and past the 16th are listed, never offered', () => {
    const good = mppxChallenge({ amount: '1', currency: 'sat', methodDetails: { invoice: INVOICE } });
    const list = [
      mppxChallenge({ amount: '1', currency: 'usd' }, 'tempo'),
      { id: 'x', realm: 'r', method: 'lightning', intent: 'charge', request: 'not an object' },
      { ...good, request: { amount: 'one', currency: 'sat', methodDetails: { invoice: INVOICE } } },
      ...Array.from({ length: 20 }, () => good),
    ];
    const read = toolChallenges({ challenges: list });
    expect(read.offers).toHaveLength(1); // the same challenge twenty times is one offer
    expect(read.unsupported[0]).toBe('tempo/charge');
    expect(read.unsupported[1]).toMatch(/^an unreadable Payment challenge/);
    expect(read.unsupported[2]).toMatch(/^lightning\/charge \(request: amount/);
    expect(read.unsupported.at(-1)).toMatch(/more than 16/);
  });

  it('payment is asked by -32042, -32043 with challenges, or a result carrying them in _meta; nothing else', () => {
    const data = { challenges: [] };
    expect(paymentRequired({ error: { code: -32042, message: 'Payment Required', data } })).toEqual({ data, code: -32042 });
    expect(paymentRequired({ error: { code: -32043, message: 'failed', data } })?.code).toBe(-32043);
    expect(paymentRequired({ error: { code: -32602, message: 'bad', data } })).toBeUndefined();
    expect(paymentRequired({ error: { code: -32042, message: 'no data' } })).toBeUndefined();
    expect(paymentRequired({ result: { content: [], _meta: { 'org.paymentauth/payment-required': data } } })).toEqual({ data, code: -32042 });
    expect(paymentRequired({ result: { content: [] } })).toBeUndefined();
  });
});

describe('the receipt of a paid result', () => {
  const receipt = { method: 'lightning', status: 'success', timestamp: '2026-11-29T10:00:00Z', challengeId: 'abc', reference: HASH };
  const result = (value: unknown) => ({ content: [], _meta: { 'org.paymentauth/receipt': value } });

  it('taken for this payment and challenge only', () => {
    expect(toolReceipt(result(receipt), 'abc', HASH)).toEqual({ serverReceipt: { challengeId: 'abc', reference: HASH, timestamp: receipt.timestamp } });
    expect(toolReceipt(result({ ...receipt, reference: '1'.repeat(64) }), 'abc', HASH)).toEqual({
      serverReceiptProblem: expect.stringMatching(/another payment/),
    });
    expect(toolReceipt(result({ ...receipt, challengeId: 'other' }), 'abc', HASH)).toEqual({
      serverReceiptProblem: expect.stringMatching(/another challenge/),
    });
    expect(toolReceipt(result({ ...receipt, status: 'pending' }), 'abc', HASH)).toEqual({
      serverReceiptProblem: expect.stringMatching(/not a Lightning receipt/),
    });
    expect(toolReceipt({ content: [] }, 'abc', HASH)).toEqual({ serverReceiptProblem: expect.stringMatching(/carries no/) });
  });
});
