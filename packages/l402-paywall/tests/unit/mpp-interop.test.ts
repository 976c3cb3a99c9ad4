// Interoperability with mppx, a peer implementation of the Payment scheme
// (its root entry exports the Challenge, Credential and Receipt codecs): each
// side reads what the other writes, and with a shared secret each verifies
// the other's challenge ids. mppx keys its HMAC with the secret's UTF-8 bytes,
// so here the keyring is built from those bytes directly, not derived.
import { Challenge, Credential, Receipt } from 'mppx';
import { describe, expect, it } from 'vitest';
import {
  BindingKeyring,
  formatChallenge,
  formatCredential,
  formatReceipt,
  parsePaymentChallenges,
  parsePaymentCredential,
  parseReceipt,
  readLightningCharge,
  verifyLightningCredential,
} from '../../src/mpp.js';
import { newPreimage } from '../support/l402.js';
import { ISSUED_AT, chargeFixture, requestOf } from '../support/mpp.js';

const SHARED_SECRET = 'a-secret-both-implementations-know-0123';
const sharedRing = () => new BindingKeyring([new TextEncoder().encode(SHARED_SECRET)]);
const NOW = ISSUED_AT + 1;

describe('mppx reads what we write', () => {
  const fixture = chargeFixture(sharedRing());
  const { challenge, header, preimage } = fixture;

  it('parses our challenge to the same fields', () => {
    const parsed = Challenge.deserialize(header);
    expect(parsed).toEqual({
      id: challenge.id,
      realm: challenge.realm,
      method: 'lightning',
      intent: 'charge',
      request: requestOf(challenge),
      expires: challenge.expires,
      opaque: challenge.opaque,
    });
    // And re-derives its id from those fields with the shared secret.
    expect(Challenge.verify(parsed, { secretKey: SHARED_SECRET })).toBe(true);
    expect(Challenge.verify({ ...parsed, realm: 'other' }, { secretKey: SHARED_SECRET })).toBe(false);
  });

  it('finds it among other schemes and challenges', () => {
    const list = Challenge.deserializeList(`${header}, L402 macaroon="abc", invoice="lnbc1", ${header}`);
    expect(list.map((c) => c.id)).toEqual([challenge.id, challenge.id]);
  });

  it('builds a credential we verify', () => {
    const credential = Credential.serialize({ challenge: Challenge.deserialize(header), payload: { preimage } });
    expect(verifyLightningCredential(fixture.ring, credential, NOW)).toMatchObject({
      ok: true,
      challengeId: challenge.id,
      amountSats: 21,
      binding: { route: '/weather' },
    });
    const wrong = Credential.serialize({ challenge: Challenge.deserialize(header), payload: { preimage: newPreimage().preimage } });
    expect(verifyLightningCredential(fixture.ring, wrong, NOW)).toMatchObject({ ok: false, problem: 'lightning/invalid-preimage' });
  });

  it('reads our credential as the challenge it echoes', () => {
    const read = Credential.deserialize(formatCredential(challenge, preimage, 'did:key:z6Mk'));
    expect(read).toEqual({ challenge: Challenge.deserialize(header), payload: { preimage }, source: 'did:key:z6Mk' });
  });

  it('parses our receipt', () => {
    const receipt = formatReceipt({ challengeId: challenge.id, paymentHash: fixture.paymentHash, settledAt: new Date(NOW * 1000) });
    expect(Receipt.deserialize(receipt)).toEqual({
      method: 'lightning',
      challengeId: challenge.id,
      reference: fixture.paymentHash,
      status: 'success',
      timestamp: new Date(NOW * 1000).toISOString().replace('.000Z', 'Z'),
    });
  });
});

describe('we read what mppx writes', () => {
  const { preimage, hash } = newPreimage();
  const request = {
    amount: '21',
    currency: 'sat',
    description: 'Weather',
    methodDetails: { invoice: 'lnbcrt210n1pexample', paymentHash: hash, network: 'regtest' },
  };
  const expires = new Date((NOW + 600) * 1000).toISOString().replace('.000Z', 'Z');
  const mppxChallenge = Challenge.from({
    realm: 'api.example.com',
    method: 'lightning',
    intent: 'charge',
    request,
    expires,
    meta: { route: '/weather' },
    secretKey: SHARED_SECRET,
  } as Parameters<typeof Challenge.from>[0]);
  const header = Challenge.serialize(mppxChallenge);
  // What mppx itself reads from its header (its in-memory challenge also keeps `meta`, opaque's fields, which the wire does not carry).
  const mppxRead = Challenge.deserialize(header);

  it('parses an mppx challenge to the same fields, and verifies its id with the shared secret', () => {
    const { challenges, refusals } = parsePaymentChallenges(`Bearer realm="x", ${header}`);
    expect(refusals).toEqual([]);
    expect(challenges).toEqual([
      {
        id: mppxChallenge.id,
        realm: 'api.example.com',
        method: 'lightning',
        intent: 'charge',
        request: expect.any(String),
        expires,
        opaque: mppxChallenge.opaque,
      },
    ]);
    const { id, ...bound } = challenges[0]!;
    expect(sharedRing().verify(id, bound)).toBe(true);
    expect(readLightningCharge(challenges[0]!)).toMatchObject({
      ok: true,
      charge: { amountSats: 21, invoice: request.methodDetails.invoice, paymentHash: hash, network: 'regtest' },
    });
  });

  it("verifies the credential a payer sends for an mppx server's challenge, with the shared secret", () => {
    const [challenge] = parsePaymentChallenges(header).challenges;
    const credential = formatCredential(challenge!, preimage);
    expect(Credential.deserialize(credential).challenge).toEqual(mppxRead);
    expect(verifyLightningCredential(sharedRing(), credential, NOW)).toMatchObject({
      ok: true,
      challengeId: mppxChallenge.id,
      paymentHash: hash,
      binding: { route: '/weather' },
    });
    expect(verifyLightningCredential(BindingKeyring.fromSecrets(SHARED_SECRET), credential, NOW)).toMatchObject({
      ok: false,
      problem: 'lightning/unknown-challenge',
    });
  });

  it('parses an mppx credential', () => {
    const credential = Credential.serialize({ challenge: mppxChallenge, payload: { preimage } });
    expect(parsePaymentCredential(credential)).toMatchObject({
      ok: true,
      credential: { challenge: { id: mppxChallenge.id, opaque: mppxChallenge.opaque }, payload: { preimage } },
    });
  });

  it('parses an mppx receipt', () => {
    const receipt = Receipt.serialize(
      Receipt.from({ method: 'lightning', challengeId: mppxChallenge.id, reference: hash, status: 'success', timestamp: expires } as never),
    );
    expect(parseReceipt(receipt)).toEqual({
      ok: true,
      receipt: { method: 'lightning', challengeId: mppxChallenge.id, reference: hash, status: 'success', timestamp: expires },
    });
  });

  it("reads mppx's \\uXXXX escape in a quoted-string as RFC 9110 does: only the display text differs", () => {
    const withDash = Challenge.serialize({ ...mppxChallenge, description: 'Weather — today' });
    expect(withDash).toContain('\\u2014');
    const [challenge] = parsePaymentChallenges(withDash).challenges;
    expect(challenge?.description).toBe('Weather u2014 today');
    expect(challenge?.id).toBe(mppxChallenge.id);
  });

  it('writes a challenge mppx reads back unchanged', () => {
    const [challenge] = parsePaymentChallenges(header).challenges;
    expect(Challenge.deserialize(formatChallenge(challenge!))).toEqual(mppxRead);
  });
});
