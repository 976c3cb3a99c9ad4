// The paying client (fetchWithL402 with createSessions and the dev wallet)
// against a seller of prepaid sessions that cheats (../support/
// hostile-session-seller.ts): whatever the seller says, the budget counts
// what the wallet paid minus what the wallet itself received, to the sat. A
// close that claims a refund it never paid credits nothing; a session refused
// for a reason that is not its balance is not replaced by a new deposit; a
// stream asking for top-ups without delivering, or after every chunk, is
// stopped; a top-up that lands on a closed session opens a new one where the
// seller lets it, and otherwise stays spent, saying so.
import { afterEach, describe, expect, it } from 'vitest';
import { createBudget, createSessions, devWallet, fetchWithL402, getPaymentReceipt, L402ClientError, type ClientSessions } from 'l402-paywall/client';
import { startHostileSeller, type HostileSeller } from '../support/hostile-session-seller.js';

const SAT = 1000;

let seller: HostileSeller | undefined;
let sessions: ClientSessions | undefined;
afterEach(async () => {
  await sessions?.closeAll();
  await seller?.close();
  seller = undefined;
  sessions = undefined;
});

async function buyer(options: Parameters<typeof startHostileSeller>[0] = {}, budgetSats = 100) {
  seller = await startHostileSeller(options);
  sessions = createSessions();
  const budget = createBudget({ totalSats: budgetSats });
  const call = (path: string) =>
    fetchWithL402(`${seller!.url}${path}`, undefined, { wallet: devWallet({ serviceUrl: seller!.url }), maxPriceSats: 1, budget, sessions, tokens: false });
  return { seller, sessions, budget, call };
}

/** Reads a stream to its end or its error. */
async function drain(response: Response): Promise<{ text: string; error?: unknown }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { text };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

describe('fetchWithL402 with sessions against a hostile seller: the budget is what the wallet paid minus what it received', () => {
  it('bearers refused for another reason and closes that claim a refund: 50 calls pay one deposit, and the budget keeps it spent', async () => {
    const { seller, sessions, budget, call } = await buyer();
    const first = await call('/refuses-bearer');
    expect(first.status).toBe(200);
    expect(getPaymentReceipt(first)?.session?.action).toBe('open');
    for (let i = 2; i <= 50; i++) {
      const error = await call('/refuses-bearer').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(L402ClientError);
      expect(error).toMatchObject({ code: 'SESSION_REFUSED', refused: true, details: { serverCode: 'WRONG_ROUTE' } });
    }
    expect(seller.walletPaid).toHaveLength(1);
    const [closed] = await sessions.closeAll();
    // The seller says it refunded all 20 sats; the wallet received none of them.
    expect(closed).toMatchObject({ status: 200, refundSats: 20, refundStatus: 'succeeded', refundSeen: false, receivedMsat: 0, creditedMsat: 0 });
    expect(closed!.refundUnconfirmed).toMatch(/had not received it 3 s after the close/);
    expect(await seller.walletReceivedMsat()).toBe(0);
    expect(budget.spent().totalMsat).toBe(seller.walletPaidMsat() - (await seller.walletReceivedMsat()));
    expect(budget.spent().totalMsat).toBe(20 * SAT);
  });

  it('a close that claims a refund it did not pay credits nothing back: deposit and top-up stay spent', async () => {
    const { seller, sessions, budget, call } = await buyer();
    for (let i = 0; i < 30; i++) expect((await call('/lying-close')).status).toBe(200);
    expect(seller.walletPaidMsat()).toBe(40 * SAT);
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ refundSats: 40, refundStatus: 'succeeded', refundSeen: false, creditedMsat: 0 });
    expect(budget.spent().totalMsat).toBe(40 * SAT);
  });

  it('an honest close is credited for what the wallet received, and says so', async () => {
    const { seller, sessions, budget, call } = await buyer();
    for (let i = 0; i < 30; i++) expect((await call('/honest')).status).toBe(200);
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ refundSats: 10, refundStatus: 'succeeded', refundSeen: true, receivedMsat: 10 * SAT, creditedMsat: 10 * SAT });
    expect(await seller.walletReceivedMsat()).toBe(10 * SAT);
    expect(budget.spent().totalMsat).toBe(seller.walletPaidMsat() - 10 * SAT);
    expect(budget.spent().totalMsat).toBe(30 * SAT);
  });

  it('a stream asking for top-ups without a chunk between: the second demand is refused unpaid (TOP_UP_REFUSED)', async () => {
    const { seller, sessions, budget, call } = await buyer({}, 1000);
    const response = await call('/endless-topup');
    const { text, error } = await drain(response);
    expect(error).toBeInstanceOf(L402ClientError);
    expect(error).toMatchObject({ code: 'TOP_UP_REFUSED', refused: true });
    expect((error as Error).message).toMatch(/another top-up .* before sending a chunk for the last one/);
    expect(text.match(/event: payment-need-topup/g)!.length).toBeGreaterThanOrEqual(2);
    // The deposit and one top-up, no more.
    expect(seller.walletPaid).toHaveLength(2);
    expect(budget.spent().totalMsat).toBe(40 * SAT);
    expect(sessions.list()[0]!.topUpError).toMatch(/before sending a chunk/);
    const [closed] = await sessions.closeAll();
    // The open spent one unit; the real ledger refunds the rest, and the wallet sees it.
    expect(closed).toMatchObject({ refundSats: 39, refundSeen: true, receivedMsat: 39 * SAT });
    expect(budget.spent().totalMsat).toBe(seller.walletPaidMsat() - (await seller.walletReceivedMsat()));
  });

  it('a stream asking for a top-up after every chunk: at most maxTopUpsPerCall (10 by default) are paid in one call', async () => {
    const { seller, sessions, budget, call } = await buyer({}, 1000);
    const { text, error } = await drain(await call('/topup-per-chunk'));
    expect(error).toMatchObject({ code: 'TOP_UP_REFUSED', refused: true });
    expect((error as Error).message).toMatch(/at most 10 top-ups/);
    expect(text).toContain('data: chunk 11\n');
    expect(text).not.toContain('data: chunk 12\n');
    expect(seller.walletPaid).toHaveLength(11);
    expect(budget.spent().totalMsat).toBe(220 * SAT);
    await sessions.closeAll();
    expect(budget.spent().totalMsat).toBe(seller.walletPaidMsat() - (await seller.walletReceivedMsat()));
  });

  it('sessions need a budget: without one the call is refused before anything is sent', async () => {
    seller = await startHostileSeller();
    const error = await fetchWithL402(`${seller.url}/honest`, undefined, {
      wallet: devWallet({ serviceUrl: seller.url }),
      maxPriceSats: 1,
      sessions: createSessions(),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/options\.sessions needs options\.budget/);
    expect(seller.actions).toEqual([]);
  });
});

describe('a top-up that finds its session closed (its refund already paid)', () => {
  it('a seller that keeps the stranded top-up refuses to open with it: the call fails TOP_UP_NOT_CREDITED, and the payment stays spent', async () => {
    const { seller, sessions, budget, call } = await buyer({ releaseStrandedTopUps: false });
    for (let i = 0; i < 5; i++) expect((await call('/closes-before-topup')).status).toBe(200);
    const error = await call('/closes-before-topup').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(L402ClientError);
    expect(error).toMatchObject({ code: 'TOP_UP_NOT_CREDITED', refused: false });
    expect((error as Error).message).toMatch(
      /20 sats paid as a top-up of session [0-9a-f]{64} were not credited \(SESSION_CLOSED\), and .* refused to open a session with them \(DEPOSIT_ALREADY_USED\): the payment stays counted as spent/,
    );
    // The open was tried with the top-up's own challenge.
    expect(seller.actions.slice(-3)).toEqual(['bearer', 'topUp', 'open']);
    expect(seller.walletPaidMsat()).toBe(40 * SAT);
    expect(budget.spent().totalMsat).toBe(40 * SAT);
    const closed = await sessions.closeAll();
    // No close is sent for the session the seller closed; its 15-sat refund, which the wallet received, is credited.
    expect(closed).toEqual([expect.objectContaining({ status: 0, refundSeen: true, receivedMsat: 15 * SAT, creditedMsat: 15 * SAT })]);
    expect(closed[0]!.error).toMatch(/SESSION_CLOSED/);
    expect(await seller.walletReceivedMsat()).toBe(15 * SAT);
    expect(budget.spent().totalMsat).toBe(25 * SAT);
  });

  it('a seller that releases it lets it open a new session, echoing the top-up challenge with a fresh return invoice: the call is served', async () => {
    const { seller, sessions, budget, call } = await buyer({ releaseStrandedTopUps: true });
    for (let i = 0; i < 5; i++) expect((await call('/closes-before-topup')).status).toBe(200);
    const [old] = sessions.list();
    const response = await call('/closes-before-topup');
    expect(response.status).toBe(200);
    const receipt = getPaymentReceipt(response)!;
    // Paid as a top-up of the old session, it is the new session's deposit: its payment hash is the session's id.
    expect(receipt.session).toEqual({ action: 'open', sessionId: receipt.paymentHash });
    expect(receipt.amountMsat).toBe(20 * SAT);
    expect(seller.actions.slice(-3)).toEqual(['bearer', 'topUp', 'open']);
    const [held] = sessions.list();
    expect(held!.sessionId).toBe(receipt.paymentHash);
    expect(held!.sessionId).not.toBe(old!.sessionId);
    expect(seller.walletPaidMsat()).toBe(40 * SAT);
    const closed = await sessions.closeAll();
    // The new session refunds 19 sats at its close; the old one's 15 came back when the seller closed it.
    expect(closed.map((c) => [c.status, c.receivedMsat / SAT]).sort()).toEqual([
      [0, 15],
      [200, 19],
    ]);
    expect(await seller.walletReceivedMsat()).toBe(34 * SAT);
    expect(budget.spent().totalMsat).toBe(6 * SAT);
  });
});
