// A spending limit shared by any number of calls. JavaScript runs one piece
// of code at a time, so a check and a charge made in one synchronous step
// cannot interleave with another call's: reserve() is that step. The charge
// is made before the wallet is asked to pay and given back if the payment
// fails, so concurrent calls can never pay more than the budget together.
import { L402ClientError } from './errors.js';

export interface BudgetOptions {
  /** What all calls together may spend, in whole satoshis. */
  totalSats: number;
  /** What calls to one host (`host[:port]`) may spend, in whole satoshis. */
  perHostSats?: number;
  /** Makes the limits rolling: only what was spent in the last windowSeconds counts. */
  windowSeconds?: number;
  /** Unix milliseconds; for tests of the window. */
  now?: () => number;
}

export interface Spending {
  /** Integer millisatoshis. */
  totalMsat: number;
  /** totalMsat / 1000 (a fraction when an invoice asked for part of a satoshi). */
  totalSats: number;
  byHost: Record<string, { msat: number; sats: number }>;
}

/** A charge held while a payment is in flight: commit() when paid, release() when not. */
export interface BudgetReservation {
  commit(): void;
  release(): void;
}

export interface Budget {
  /** Charges amountMsat to host now, or throws BUDGET_EXCEEDED without charging anything. */
  reserve(host: string, amountMsat: number): BudgetReservation;
  /** What was paid (within the window, when there is one); payments still in flight are not included. */
  spent(): Spending;
  /** What may still be reserved, in msat, overall and for a host (in-flight payments count as spent). */
  remainingMsat(host?: string): number;
}

interface Charge {
  host: string;
  msat: number;
  at: number;
  settled: boolean;
}

export function createBudget(options: BudgetOptions): Budget {
  const { totalSats, perHostSats, windowSeconds } = options;
  const wholeSats = (value: number | undefined, name: string) => {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) throw new TypeError(`createBudget: ${name} must be a whole number of satoshis, got ${value}`);
  };
  wholeSats(totalSats, 'totalSats');
  if (totalSats === undefined) throw new TypeError('createBudget: totalSats is required');
  wholeSats(perHostSats, 'perHostSats');
  if (windowSeconds !== undefined && !(windowSeconds > 0)) throw new TypeError('createBudget: windowSeconds must be positive');
  const now = options.now ?? Date.now;
  const totalMsat = totalSats * 1000;
  const perHostMsat = perHostSats === undefined ? undefined : perHostSats * 1000;
  let charges: Charge[] = [];

  /** Drops settled charges that left the window (in-flight ones stay until settled). */
  function current(): Charge[] {
    if (windowSeconds !== undefined) {
      const since = now() - windowSeconds * 1000;
      if (charges.some((c) => c.settled && c.at <= since)) charges = charges.filter((c) => !c.settled || c.at > since);
    }
    return charges;
  }

  function sum(list: Charge[], host?: string): number {
    let msat = 0;
    for (const c of list) if (host === undefined || c.host === host) msat += c.msat;
    return msat;
  }

  return {
    reserve(host, amountMsat) {
      if (!Number.isSafeInteger(amountMsat) || amountMsat <= 0) throw new RangeError('amountMsat must be a positive integer');
      const list = current();
      const overall = sum(list);
      if (overall + amountMsat > totalMsat) {
        throw new L402ClientError('BUDGET_EXCEEDED', `Not paid: ${amountMsat / 1000} sats would take the budget past its ${totalSats} sats (${overall / 1000} spent or in flight)`, { amountMsat });
      }
      if (perHostMsat !== undefined) {
        const forHost = sum(list, host);
        if (forHost + amountMsat > perHostMsat) {
          throw new L402ClientError('BUDGET_EXCEEDED', `Not paid: ${amountMsat / 1000} sats would take ${host} past its ${perHostSats} sats (${forHost / 1000} spent or in flight)`, { amountMsat });
        }
      }
      const charge: Charge = { host, msat: amountMsat, at: now(), settled: false };
      charges.push(charge);
      let done = false;
      return {
        commit() {
          if (done) return;
          done = true;
          charge.settled = true;
          charge.at = now();
        },
        release() {
          if (done) return;
          done = true;
          charges = charges.filter((c) => c !== charge);
        },
      };
    },

    spent() {
      const byHost: Spending['byHost'] = {};
      let total = 0;
      for (const c of current()) {
        if (!c.settled) continue;
        total += c.msat;
        const entry = (byHost[c.host] ??= { msat: 0, sats: 0 });
        entry.msat += c.msat;
        entry.sats = entry.msat / 1000;
      }
      return { totalMsat: total, totalSats: total / 1000, byHost };
    },

    remainingMsat(host) {
      const list = current();
      const overall = totalMsat - sum(list);
      if (host === undefined || perHostMsat === undefined) return Math.max(0, overall);
      return Math.max(0, Math.min(overall, perHostMsat - sum(list, host)));
    },
  };
}
