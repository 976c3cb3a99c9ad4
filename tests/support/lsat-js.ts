// lsat-js's whole flow against a 402 source (Lightning Labs' JavaScript L402
// library, code we did not write): read the challenge, check the payment hash
// in the macaroon's identifier against the invoice's, pay, then send its
// toToken() (`LSAT <mac>:<preimage>`) twice. What the two answers were.
import { Lsat } from 'lsat-js';
import { expect } from 'vitest';

export interface LsatAnswer {
  status: number;
  code?: string;
}

export async function payWithLsatJs(
  get: (authorization?: string) => Promise<Response>,
  pay: (invoice: string) => Promise<string>,
): Promise<[LsatAnswer, LsatAnswer]> {
  const challenge = await get();
  expect(challenge.status).toBe(402);
  const header = challenge.headers.get('www-authenticate')!;
  const body = (await challenge.json()) as { invoice: string; paymentHash: string; macaroon: string };
  const lsat = Lsat.fromHeader(header);
  expect(lsat.baseMacaroon).toBe(body.macaroon);
  expect(lsat.invoice).toBe(body.invoice);
  expect(lsat.paymentHash).toBe(body.paymentHash);
  // fromMacaroon reads the payment hash from the identifier, and addInvoice checks it against the invoice's.
  const fromMacaroon = Lsat.fromMacaroon(lsat.baseMacaroon, lsat.invoice);
  expect(fromMacaroon.paymentHash).toBe(body.paymentHash);
  lsat.setPreimage(await pay(lsat.invoice));
  expect(lsat.isSatisfied()).toBe(true);
  const token = lsat.toToken();
  expect(token).toMatch(/^LSAT [A-Za-z0-9+/]+={0,2}:[0-9a-f]{64}$/);
  const answer = async (response: Response): Promise<LsatAnswer> =>
    response.status === 402
      ? { status: 402, code: ((await response.json()) as { code: string }).code }
      : (await response.arrayBuffer(), { status: response.status });
  return [await answer(await get(token)), await answer(await get(token))];
}
