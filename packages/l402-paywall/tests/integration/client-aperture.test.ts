// fetchWithL402 against Aperture-style servers that mint real macaroons
// (tests/support/aperture-macaroons.ts: js-macaroon, Aperture's identifier,
// verified as Aperture verifies): it pays an LSAT-only 402, a macaroon in
// URL-safe base64, and a bLIP-26 `version="0", token=` challenge without
// `macaroon=`, each on first try and once; and it pays nothing for a macaroon
// whose identifier names another payment than its invoice.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDevNode } from 'l402-paywall/backends';
import { createTokenStore, fetchWithL402, L402ClientError } from 'l402-paywall/client';
import { recordingWallet, startStandIn, type RecordingWallet, type StandIn } from '../support/paid-apps.js';
import { apertureMacaroonServer, type ApertureForm } from '../support/aperture-macaroons.js';

const node = createDevNode();
let standIn: StandIn;
let wallet: RecordingWallet;

beforeAll(async () => {
  standIn = await startStandIn();
});
afterAll(() => standIn?.close());
beforeEach(() => {
  wallet = recordingWallet(node);
  standIn.requests.length = 0;
});

describe('fetchWithL402 pays Aperture-style servers', () => {
  const forms: [ApertureForm, RegExp][] = [
    ['lsat-only', /^LSAT [A-Za-z0-9+/]+={0,2}:[0-9a-f]{64}$/],
    ['url-safe', /^L402 [A-Za-z0-9_-]+:[0-9a-f]{64}$/],
    ['token-only', /^L402 [A-Za-z0-9+/]+={0,2}:[0-9a-f]{64}$/],
  ];
  for (const [form, sent] of forms) {
    it(`a ${form} challenge: paid once, served on the retry, the macaroon sent back as given`, async () => {
      const server = apertureMacaroonServer(node, form);
      standIn.respond = (req) => server.respond(req);
      const response = await fetchWithL402(`${standIn.url}/${form}`, undefined, { wallet, maxPriceSats: 2, tokens: createTokenStore() });
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(`served (${form})`);
      expect(wallet.invoices).toHaveLength(1);
      expect(standIn.requests).toHaveLength(2);
      expect(standIn.requests[1]!.headers.authorization).toMatch(sent);
      expect(server).toMatchObject({ served: 1, refused: 0 });
    });
  }

  it('pays nothing for a macaroon whose identifier names another payment hash than its invoice', async () => {
    const server = apertureMacaroonServer(node, 'wrong-hash');
    standIn.respond = (req) => server.respond(req);
    const error = await fetchWithL402(`${standIn.url}/wrong-hash`, undefined, { wallet, maxPriceSats: 2, tokens: createTokenStore() }).then(
      () => expect.fail('expected the call to be refused'),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(L402ClientError);
    expect((error as L402ClientError).code).toBe('TOKEN_INVOICE_MISMATCH');
    expect(wallet.invoices).toHaveLength(0);
  });
});
