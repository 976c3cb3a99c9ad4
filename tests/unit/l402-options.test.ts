// Options are checked where they are given: withL402 (and the adapters built
// on createPaywall) refuse unusable options at construction, naming the option.
import { withL402, Keyring } from 'l402-paywall';
import { l402Middleware } from 'l402-paywall/express';
import { describe, expect, it } from 'vitest';
import { recordingProvider } from '../support/l402.js';

const SECRET = 'options-test-secret-0123456789abcdef0123456789';
const handler = () => Response.json({ ok: true });
const valid = () => ({ priceSats: 10, provider: recordingProvider(), secret: SECRET });

describe('withL402 options', () => {
  it('a secret from an unset environment variable is named, not a TypeError deep inside', () => {
    expect(() => withL402(handler, { ...valid(), secret: process.env.L402_SECRET_THAT_IS_NOT_SET! })).toThrow(
      /option `secret` is missing \(is the environment variable/,
    );
    expect(() => withL402(handler, { ...valid(), secret: '' })).toThrow(/option `secret` is missing/);
  });

  it('a secret shorter than 32 bytes is refused, in the library as in the service', () => {
    expect(() => withL402(handler, { ...valid(), secret: 'abc' })).toThrow(/secret must be at least 32 bytes, got 3/);
    expect(() => withL402(handler, { ...valid(), secret: 'x'.repeat(31) })).toThrow(/at least 32 bytes/);
    expect(() => withL402(handler, { ...valid(), secret: [SECRET, 'short'] })).toThrow(/secret\[1\] must be at least 32 bytes/);
    expect(() => new Keyring(['short'])).toThrow(/at least 32 bytes/);
    expect(() => withL402(handler, { ...valid(), secret: 'x'.repeat(32) })).not.toThrow();
  });

  it('each other option is named when it cannot work', () => {
    expect(() => withL402(handler, { ...valid(), priceSats: 0 })).toThrow(/priceSats must be a positive whole number/);
    expect(() => withL402(handler, { ...valid(), priceSats: 1.5 })).toThrow(/priceSats/);
    expect(() => withL402(handler, { ...valid(), priceSats: '10' as never })).toThrow(/option `priceSats`/);
    expect(() => withL402(handler, { ...valid(), provider: undefined as never })).toThrow(/option `provider` must be a Lightning backend/);
    expect(() => withL402(handler, { ...valid(), provider: {} as never })).toThrow(/option `provider`/);
    expect(() => withL402(handler, { ...valid(), replayStore: {} as never })).toThrow(/option `replayStore`/);
    expect(() => withL402(handler, { ...valid(), route: 42 as never })).toThrow(/option `route`/);
    expect(() => withL402(handler, { ...valid(), onPaid: 'yes' as never })).toThrow(/option `onPaid` must be a function/);
    expect(() => withL402(handler, { ...valid(), uses: 0 })).toThrow(/uses must be a positive integer/);
    expect(() => withL402(handler, { ...valid(), tokenTtlSeconds: -1 })).toThrow(/tokenTtlSeconds/);
    expect(() => withL402(handler, undefined as never)).toThrow(/needs options/);
  });

  it('the Express adapter checks the same way', () => {
    expect(() => l402Middleware({ ...valid(), secret: undefined as never })).toThrow(/option `secret` is missing/);
  });
});
