// Aperture-style servers for the client's tests: real macaroons minted with
// js-macaroon (npm `macaroon`, what Aperture's JavaScript clients use) with
// Aperture's version 0 identifier (uint16 0, payment hash, 32-byte token id)
// and its caveats, challenged in the forms servers in the wild send, and
// verified the way Aperture does: the macaroon's chain under its root key, and
// SHA256(preimage) equal to the identifier's payment hash.
import type { IncomingMessage } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import macaroon from 'macaroon';
import type { DevNode } from 'l402-paywall/backends';
import type { ScriptedAnswer } from './paid-apps.js';

/**
 * How the 402 offers the macaroon:
 * - `lsat-only`: `LSAT macaroon="…", invoice="…"` alone (older Aperture, lsat-js servers);
 * - `url-safe`: `L402 macaroon="…"` in URL-safe base64 without padding;
 * - `token-only`: the bLIP-26 revision's `L402 version="0", token="…", invoice="…"`, no `macaroon=`;
 * - `wrong-hash`: a macaroon whose identifier names another payment than its invoice (hostile).
 */
export type ApertureForm = 'lsat-only' | 'url-safe' | 'token-only' | 'wrong-hash';

export function apertureMacaroonServer(node: DevNode, form: ApertureForm, priceSats = 2) {
  const rootKey = randomBytes(32);
  let served = 0;
  let refused = 0;
  const mint = (paymentHash: string) => {
    const identifier = new Uint8Array(66);
    identifier.set(Buffer.from(paymentHash, 'hex'), 2);
    identifier.set(randomBytes(32), 34);
    const m = macaroon.newMacaroon({ identifier, rootKey, location: 'aperture', version: 2 });
    m.addFirstPartyCaveat('services=stand-in:0');
    m.addFirstPartyCaveat(`stand-in_valid_until=${Math.floor(Date.now() / 1000) + 600}`);
    return Buffer.from(m.exportBinary());
  };
  const verify = (authorization: string): boolean => {
    const credential = /^(?:LSAT|L402) ([A-Za-z0-9+/_=-]+):([0-9a-f]{64})$/i.exec(authorization);
    if (!credential) return false;
    try {
      const m = macaroon.importMacaroon(Buffer.from(credential[1]!, 'base64'));
      m.verify(rootKey, (condition) => (condition.startsWith('services=') || condition.startsWith('stand-in_valid_until=') ? null : 'unknown caveat'));
      const hash = Buffer.from(m.identifier.subarray(2, 34)).toString('hex');
      return createHash('sha256').update(Buffer.from(credential[2]!, 'hex')).digest('hex') === hash;
    } catch {
      return false;
    }
  };
  return {
    get served() {
      return served;
    },
    get refused() {
      return refused;
    },
    async respond(req: IncomingMessage): Promise<ScriptedAnswer> {
      if (req.headers.authorization) {
        if (verify(req.headers.authorization)) {
          served++;
          return { status: 200, headers: [['content-type', 'text/plain']], body: `served (${form})` };
        }
        refused++;
      }
      const invoice = await node.createInvoice({ amountMsat: priceSats * 1000, memo: `aperture ${form}` });
      const bytes = mint(form === 'wrong-hash' ? randomBytes(32).toString('hex') : invoice.paymentHash);
      const standard = bytes.toString('base64');
      const challenge =
        form === 'lsat-only'
          ? `LSAT macaroon="${standard}", invoice="${invoice.invoice}"`
          : form === 'url-safe'
            ? `L402 macaroon="${bytes.toString('base64url')}", invoice="${invoice.invoice}"`
            : form === 'token-only'
              ? `L402 version="0", token="${standard}", invoice="${invoice.invoice}"`
              : `L402 macaroon="${standard}", invoice="${invoice.invoice}"`;
      return { status: 402, headers: [['WWW-Authenticate', challenge]], body: 'payment required' };
    },
  };
}
