// Payment-Receipt and the problem details bodies.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PROBLEMS, formatReceipt, parseReceipt, problemDetails, problemType } from '../../src/mpp.js';
import { encodeJson } from '../../src/schemes/payment/wire.js';
import { anyText } from '../support/mpp.js';

const HASH = 'bc'.repeat(32);
const SETTLED = new Date(Date.UTC(2026, 2, 10, 21, 0, 0, 789));

describe('formatReceipt', () => {
  it("is base64url of the JCS JSON the Lightning draft's example shows, the reference being the payment hash", () => {
    const receipt = formatReceipt({ challengeId: 'kM9xPqWvT2nJrHsY4aDfEb', paymentHash: HASH.toUpperCase(), settledAt: SETTLED });
    expect(Buffer.from(receipt, 'base64url').toString()).toBe(
      `{"challengeId":"kM9xPqWvT2nJrHsY4aDfEb","method":"lightning","reference":"${HASH}","status":"success","timestamp":"2026-03-10T21:00:00Z"}`,
    );
    expect(receipt).not.toContain('=');
  });

  it('refuses what is not a receipt', () => {
    for (const input of [
      { challengeId: '', paymentHash: HASH, settledAt: SETTLED },
      { challengeId: 'a', paymentHash: 'ab', settledAt: SETTLED },
      { challengeId: 'a', paymentHash: HASH, settledAt: new Date(Number.NaN) },
    ]) {
      expect(() => formatReceipt(input), JSON.stringify(input)).toThrow(TypeError);
    }
  });
});

describe('parseReceipt', () => {
  it('reads back what formatReceipt writes', () => {
    expect(parseReceipt(formatReceipt({ challengeId: 'abc', paymentHash: HASH, settledAt: SETTLED }))).toEqual({
      ok: true,
      receipt: { method: 'lightning', challengeId: 'abc', reference: HASH, status: 'success', timestamp: '2026-03-10T21:00:00Z' },
    });
  });

  it('refuses receipts of other methods, failures, and a preimage-looking or missing reference', () => {
    const good = { method: 'lightning', challengeId: 'abc', reference: HASH, status: 'success', timestamp: '2026-03-10T21:00:00Z' };
    for (const [what, receipt] of [
      ['another method', { ...good, method: 'tempo' }],
      ['not success', { ...good, status: 'failed' }],
      ['no challengeId', { ...good, challengeId: undefined }],
      // draft-lightning-charge's own example has "a3f1...e209" here: not a payment hash.
      ['the draft example reference', { ...good, reference: 'a3f1...e209' }],
      ['no timestamp', { ...good, timestamp: undefined }],
      ['a timestamp in another format', { ...good, timestamp: 'Tue, 10 Mar 2026 21:00:00 GMT' }],
    ] as const) {
      expect(parseReceipt(encodeJson(receipt)), what).toEqual({ ok: false, detail: expect.any(String) });
    }
    for (const value of [null, undefined, '', 'not base64!', Buffer.from('[1]').toString('base64url')])
      expect(parseReceipt(value).ok, String(value)).toBe(false);
  });

  it('never throws', () => {
    fc.assert(fc.property(anyText(), (text) => void parseReceipt(text)));
    fc.assert(fc.property(fc.jsonValue(), (value) => void parseReceipt(Buffer.from(JSON.stringify(value)).toString('base64url'))));
  });
});

describe('problem details', () => {
  it('are RFC 9457 bodies with the drafts’ type URIs', () => {
    expect(problemDetails('lightning/invalid-preimage', 'SHA-256 of the preimage is not the payment hash')).toEqual({
      type: 'https://paymentauth.org/problems/lightning/invalid-preimage',
      title: 'Invalid Preimage',
      status: 402,
      detail: 'SHA-256 of the preimage is not the payment hash',
    });
    expect(problemType('payment-required')).toBe('https://paymentauth.org/problems/payment-required');
    expect(problemDetails('method-unsupported', 'x').status).toBe(400);
  });

  it('carry extensions, which never replace the standard members', () => {
    expect(problemDetails('payment-required', 'Pay', { challengeId: 'abc', type: 'about:blank', status: 200 })).toEqual({
      type: 'https://paymentauth.org/problems/payment-required',
      title: 'Payment Required',
      status: 402,
      detail: 'Pay',
      challengeId: 'abc',
    });
  });

  it('cover the Lightning charge draft’s four types', () => {
    for (const code of ['malformed-credential', 'unknown-challenge', 'invalid-preimage', 'expired-invoice']) {
      expect(PROBLEMS, code).toHaveProperty([`lightning/${code}`]);
    }
  });
});
