// Reading L402 challenges the way real servers send them: the `L402` and
// legacy `LSAT` schemes, the token as `token=`, `macaroon=` or bare
// (`L402 <macaroon>, invoice="…"`, this project's first form), several
// challenges in one WWW-Authenticate field (Headers.get() joins repeated
// fields with ", "), other schemes mixed in, unknown parameters ignored.
// Beside them, the Payment scheme's Lightning charge challenges (docs/mpp.md),
// read with the src/schemes/payment/ codecs. The WWW-Authenticate grammar itself is read
// by http/authenticate.ts.
import { parseAuthenticate } from '../http/authenticate.js';
import { CHARGE_INTENT, LIGHTNING_METHOD, parsePaymentChallenges, readLightningCharge, type LightningCharge } from '../schemes/payment/challenge.js';

export interface L402Challenge {
  /** `L402` or `LSAT`, as the server spelled the scheme (upper-cased). */
  scheme: 'L402' | 'LSAT';
  /** The macaroon or token to send back, as given. */
  token: string;
  invoice: string;
}

/**
 * The L402 challenges of a WWW-Authenticate value, each with a token and an
 * invoice, duplicates (one challenge sent in several forms) merged.
 */
export function l402Challenges(header: string | null): L402Challenge[] {
  if (!header) return [];
  const found: L402Challenge[] = [];
  for (const raw of parseAuthenticate(header)) {
    const scheme = raw.scheme.toUpperCase();
    if (scheme !== 'L402' && scheme !== 'LSAT') continue;
    const token = raw.params.get('token') || raw.params.get('macaroon') || raw.token68;
    const invoice = raw.params.get('invoice');
    if (!token || !invoice) continue;
    const same = found.find((c) => c.token === token && c.invoice === invoice);
    // One challenge in both schemes (Aperture sends LSAT then L402): answer with L402.
    if (same) {
      if (scheme === 'L402') same.scheme = 'L402';
      continue;
    }
    found.push({ scheme, token, invoice });
  }
  return found;
}

/** The challenge in a 402's JSON body ({macaroon|token, invoice}), for clients that cannot read the header (a browser without CORS exposure). */
export function bodyChallenge(body: unknown): L402Challenge | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  const token = typeof b.macaroon === 'string' ? b.macaroon : typeof b.token === 'string' ? b.token : undefined;
  const invoice = typeof b.invoice === 'string' ? b.invoice : undefined;
  return token && invoice ? { scheme: 'L402', token, invoice } : undefined;
}

/** The Payment challenges of a WWW-Authenticate value this client can pay, and the ones it cannot. */
export interface PaymentCharges {
  /** Lightning charge challenges, their requests decoded (the invoice is the payer's to check). */
  charges: LightningCharge[];
  /** Why each other Payment challenge is not paid: `tempo/charge`, `lightning/session`, or what was malformed. */
  unsupported: string[];
}

/**
 * The Payment challenges (`method="lightning"`, `intent="charge"`) of a
 * WWW-Authenticate value. Other methods and intents, and challenges that do
 * not read, are listed in `unsupported` and never paid.
 */
export function paymentCharges(header: string | null): PaymentCharges {
  const found: PaymentCharges = { charges: [], unsupported: [] };
  if (!header) return found;
  const { challenges, refusals } = parsePaymentChallenges(header);
  for (const challenge of challenges) {
    const read = readLightningCharge(challenge);
    if (read.ok) {
      // The same challenge sent twice is one offer.
      if (!found.charges.some((c) => c.challenge.id === challenge.id && c.challenge.request === challenge.request)) found.charges.push(read.charge);
    } else if (challenge.method === LIGHTNING_METHOD && challenge.intent === CHARGE_INTENT) {
      found.unsupported.push(`${LIGHTNING_METHOD}/${CHARGE_INTENT} (${read.detail})`);
    } else {
      found.unsupported.push(`${challenge.method}/${challenge.intent}`);
    }
  }
  for (const refusal of refusals) found.unsupported.push(`an unreadable Payment challenge (${refusal.detail})`);
  return found;
}
