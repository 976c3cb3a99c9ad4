// Every challenge form real servers send, read the same way.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { l402Challenges, parseAuthenticate, paymentCharges } from 'l402-paywall/client';
import { challengeHeaders } from 'l402-paywall';
import { parseAuthenticate as sharedParseAuthenticate } from '../../src/http/authenticate.js';
import { formatChallenge } from '../../src/mpp.js';
import { chargeFixture, withRequest } from '../support/mpp.js';

const MAC = 'AgEEbHNhdAJCAAD8h0dm+/0kJ5Kb4Bq2LkH8eLhS7h0=';
const INV = 'lnbcrt10n1pjexample';

describe('l402Challenges', () => {
  it("reads this project's two forms, joined by Headers.get(), as one challenge", () => {
    const headers = new Headers();
    for (const value of challengeHeaders('eyJ2IjoxfQ', INV)) headers.append('WWW-Authenticate', value);
    expect(l402Challenges(headers.get('www-authenticate'))).toEqual([{ scheme: 'L402', token: 'eyJ2IjoxfQ', invoice: INV }]);
  });

  it('reads the bare form alone, standard base64 with padding included', () => {
    expect(l402Challenges(`L402 ${MAC}, invoice="${INV}"`)).toEqual([{ scheme: 'L402', token: MAC, invoice: INV }]);
  });

  it('reads macaroon= and token= in any order, quoted or not, with unknown parameters ignored', () => {
    expect(l402Challenges(`L402 version="0", token="${MAC}", invoice="${INV}"`)).toEqual([{ scheme: 'L402', token: MAC, invoice: INV }]);
    expect(l402Challenges(`l402 invoice=${INV}, macaroon=${MAC}, foo="a, b"`)).toEqual([{ scheme: 'L402', token: MAC, invoice: INV }]);
  });

  it('reads Aperture: LSAT then L402 for the same payment, answering with L402', () => {
    const header = `LSAT macaroon="${MAC}", invoice="${INV}", L402 macaroon="${MAC}", invoice="${INV}"`;
    expect(l402Challenges(header)).toEqual([{ scheme: 'L402', token: MAC, invoice: INV }]);
    expect(l402Challenges(`LSAT macaroon="${MAC}", invoice="${INV}"`)).toEqual([{ scheme: 'LSAT', token: MAC, invoice: INV }]);
  });

  it('keeps distinct challenges apart and skips other schemes and incomplete ones', () => {
    const header = `Bearer realm="api", error="invalid_token", L402 macaroon="a1", invoice="lnbc1", Basic YWxhZGRpbjpvcGVuc2VzYW1l, L402 token="b2", L402 macaroon="c3", invoice="lnbc3"`;
    expect(l402Challenges(header)).toEqual([
      { scheme: 'L402', token: 'a1', invoice: 'lnbc1' },
      { scheme: 'L402', token: 'c3', invoice: 'lnbc3' },
    ]);
  });

  it('reads escaped quotes and never throws on garbage', () => {
    expect(parseAuthenticate('L402 macaroon="a\\"b", invoice="x"')[0]!.params.get('macaroon')).toBe('a"b');
    for (const junk of ['', ',,,', '"', 'L402', 'L402 =', '=x', 'L402 macaroon="unterminated', '\u0000\u00ff L402 ,, ="']) {
      expect(() => l402Challenges(junk)).not.toThrow();
    }
    expect(l402Challenges(null)).toEqual([]);
  });

  it('reads any token and invoice back from every form a server may send, alone or joined with others', () => {
    const base64 = fc.stringMatching(/^[A-Za-z0-9+/_-]{1,60}={0,2}$/);
    const bolt11 = fc.stringMatching(/^ln(bc|tb|bcrt)[0-9a-z]{10,80}$/);
    fc.assert(
      fc.property(base64, bolt11, fc.constantFrom('L402', 'LSAT', 'l402'), fc.integer({ min: 0, max: 3 }), (token, invoice, scheme, form) => {
        const header = [
          `${scheme} ${token}, invoice="${invoice}"`,
          `${scheme} macaroon="${token}", invoice="${invoice}"`,
          `${scheme} version="0", token="${token}", invoice="${invoice}"`,
          `Bearer realm="x", ${scheme} invoice=${invoice}, macaroon="${token}", Basic abc==`,
        ][form]!;
        expect(l402Challenges(header)).toEqual([{ scheme: scheme.toUpperCase(), token, invoice }]);
      }),
    );
  });

  it('never throws, whatever the header', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (header) => void l402Challenges(header)));
  });
});

describe('paymentCharges: the Payment challenges a client pays', () => {
  const fixture = chargeFixture();
  const other = (method: string, intent: string) => formatChallenge({ ...fixture.challenge, method, intent });

  it('reads a Lightning charge among L402 and other schemes, once however often it is sent', () => {
    const header = `L402 macaroon="${MAC}", invoice="${INV}", ${fixture.header}, Bearer realm="x", ${fixture.header}`;
    const { charges, unsupported } = paymentCharges(header);
    expect(unsupported).toEqual([]);
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({
      challenge: fixture.challenge,
      invoice: fixture.invoice,
      paymentHash: fixture.paymentHash,
      amountSats: 21,
      network: 'regtest',
    });
    // The L402 reader still sees its own challenge beside it.
    expect(l402Challenges(header)).toEqual([{ scheme: 'L402', token: MAC, invoice: INV }]);
  });

  it('lists other methods and intents, and unreadable challenges, as unsupported: never as charges', () => {
    const broken = withRequest(fixture.challenge, (request) => {
      request.currency = 'usd';
    });
    const header = [other('tempo', 'charge'), other('lightning', 'session'), formatChallenge(broken), 'Payment abc'].join(', ');
    const { charges, unsupported } = paymentCharges(header);
    expect(charges).toEqual([]);
    expect(unsupported).toEqual([
      'tempo/charge',
      'lightning/session',
      expect.stringMatching(/^lightning\/charge \(request: currency/),
      expect.stringMatching(/^an unreadable Payment challenge/),
    ]);
    expect(paymentCharges(null)).toEqual({ charges: [], unsupported: [] });
  });

  it('parseAuthenticate lives in http/authenticate.ts, the one reader of both schemes', () => {
    expect(parseAuthenticate).toBe(sharedParseAuthenticate);
    expect(parseAuthenticate(fixture.header)[0]!.params.get('method')).toBe('lightning');
  });
});
