// The challenges of a 402 (or 401) this client can pay, and the one it pays:
// each invoice checked (invoice-check.ts), a Payment challenge's own fields
// held against its invoice, an L402 token against its payment hash; the
// cheapest acceptable offer in the preferred scheme, else in the other.
import type { DecodedInvoice } from '../lightning/bolt11.js';
import { tokenPaymentHash } from '../schemes/l402/token.js';
import type { LightningCharge } from '../schemes/payment/challenge.js';
import { readBoundedText } from '../http/read-bounded.js';
import { bodyChallenge, l402Challenges, paymentCharges, type L402Challenge } from './challenge.js';
import { L402ClientError } from './errors.js';
import { checkedInvoice, type CheckedInvoice } from './invoice-check.js';
import type { FetchWithL402Options, PaymentScheme } from './options.js';

/** A challenge this client can pay: an L402 one, or a Payment scheme Lightning charge. */
export type Offer = { scheme: 'L402'; challenge: L402Challenge; invoice: string } | { scheme: 'Payment'; charge: LightningCharge; invoice: string };

export async function readChallenges(response: Response, maxBytes: number): Promise<{ offers: Offer[]; unsupported: string[] }> {
  const header = response.headers.get('www-authenticate');
  const { charges, unsupported } = paymentCharges(header);
  const offers: Offer[] = [
    ...l402Challenges(header).map((challenge) => ({ scheme: 'L402' as const, challenge, invoice: challenge.invoice })),
    ...charges.map((charge) => ({ scheme: 'Payment' as const, charge, invoice: charge.invoice })),
  ];
  if (offers.length > 0 || response.status !== 402) return { offers, unsupported };
  // No readable header (a browser that was not allowed to see it): the body may carry the same facts.
  if (!/json/i.test(response.headers.get('content-type') ?? '')) return { offers, unsupported };
  // Read from a copy, so that a 402 returned as it is keeps its body; a body past the limit is no challenge.
  const body = await readBoundedText(response.clone().body, maxBytes);
  if (!body.ok) return { offers, unsupported };
  try {
    const fromBody = bodyChallenge(JSON.parse(body.text));
    return { offers: fromBody ? [{ scheme: 'L402', challenge: fromBody, invoice: fromBody.invoice }] : [], unsupported };
  } catch {
    return { offers, unsupported };
  }
}

/** The schemes among `offers`, L402 first (a receipt's `offered`). */
export function offeredSchemes(offers: Offer[]): PaymentScheme[] {
  return (['L402', 'Payment'] as const).filter((scheme) => offers.some((offer) => offer.scheme === scheme));
}

export interface Chosen {
  offer: Offer;
  invoice: CheckedInvoice;
}

/**
 * The cheapest offer in the preferred scheme whose invoice passes every
 * check, else the cheapest in the other; or the first refusal (the preferred
 * scheme's first).
 */
export function chooseOffer(offers: Offer[], options: FetchWithL402Options, url: URL): Chosen {
  const preferred: PaymentScheme = options.scheme ?? 'L402';
  const rank = (offer: Offer) => (offer.scheme === preferred ? 0 : 1);
  let refusal: L402ClientError | undefined;
  let best: Chosen | undefined;
  for (const offer of [...offers].sort((a, b) => rank(a) - rank(b))) {
    try {
      const invoice = acceptableInvoice(offer, options, url);
      if (!best || rank(offer) < rank(best.offer) || (rank(offer) === rank(best.offer) && invoice.amountMsat < best.invoice.amountMsat))
        best = { offer, invoice };
    } catch (error) {
      if (!(error instanceof L402ClientError)) throw error;
      refusal ??= error;
    }
  }
  if (best) return best;
  throw refusal!;
}

/** The Lightning method's network names (draft-lightning-charge) as BOLT 11 networks. */
const CHARGE_NETWORKS = { mainnet: 'bitcoin', regtest: 'regtest', signet: 'signet' } as const;

function acceptableInvoice(offer: Offer, options: FetchWithL402Options, url: URL): CheckedInvoice {
  const where = {
    url: url.href,
    scheme: offer.scheme === 'L402' ? offer.challenge.scheme : offer.scheme,
    ...(offer.scheme === 'Payment' && { challengeId: offer.charge.challenge.id }),
  };
  // draft-lightning-charge: the payer decodes the invoice itself and refuses a challenge whose convenience fields disagree with it.
  const disagree =
    offer.scheme === 'Payment'
      ? (invoice: DecodedInvoice) => {
          const { charge } = offer;
          return charge.paymentHash !== undefined && charge.paymentHash !== invoice.paymentHash
            ? `payment hash ${charge.paymentHash}, the invoice's is ${invoice.paymentHash}`
            : CHARGE_NETWORKS[charge.network] !== invoice.network
              ? `network ${charge.network}, the invoice is for ${invoice.network}`
              : invoice.amountMsat !== null && charge.amountSats * 1000 !== invoice.amountMsat
                ? `amount ${charge.amountSats} sats, the invoice asks ${invoice.amountMsat / 1000}`
                : undefined;
        }
      : undefined;
  const invoice = checkedInvoice(offer.invoice, options, url, where, {
    challengeExpiresAt: offer.scheme === 'Payment' ? offer.charge.expiresAt : undefined,
    maxSats: options.maxPriceSats,
    what: 'the invoice',
    disagree,
  });
  // A token that names a payment hash (this project's, or a macaroon with Aperture's identifier) must name this invoice's, or paying would buy nothing.
  const tokenHash = offer.scheme === 'L402' ? tokenPaymentHash(offer.challenge.token) : undefined;
  if (tokenHash !== undefined && tokenHash !== invoice.paymentHash) {
    const facts = { ...where, paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat, network: invoice.network };
    throw new L402ClientError('TOKEN_INVOICE_MISMATCH', 'Not paid: the token in the challenge is for another payment than its invoice', facts);
  }
  return invoice;
}
