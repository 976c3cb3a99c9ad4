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
  /**
   * Gives back money that came back from host (a prepaid session's refund):
   * what was paid to host shrinks by amountMsat, at most to zero, newest
   * payments first (so a rolling window forgets them as before). Returns the
   * msat credited. Optional for budgets of your own; createBudget's has it.
   */
  credit?(host: string, amountMsat: number): number;
}

/** Millisatoshis overall and per host; hosts at zero are removed, so the map holds only hosts that count. */
class Tally {
  total = 0;
  readonly byHost = new Map<string, number>();

  of(host: string): number {
    return this.byHost.get(host) ?? 0;
  }

  add(host: string, msat: number): void {
    this.total += msat;
    const left = this.of(host) + msat;
    if (left === 0) this.byHost.delete(host);
    else this.byHost.set(host, left);
  }
}

interface SettledCharge {
  host: string;
  msat: number;
  /** Unix ms when it was paid. */
  at: number;
}

export function createBudget(options: BudgetOptions): Budget {
  const { totalSats, perHostSats, windowSeconds } = options;
  const wholeSats = (value: number | undefined, name: string) => {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0))
      throw new TypeError(`createBudget: ${name} must be a whole number of satoshis, got ${value}`);
  };
  wholeSats(totalSats, 'totalSats');
  if (totalSats === undefined) throw new TypeError('createBudget: totalSats is required');
  wholeSats(perHostSats, 'perHostSats');
  if (windowSeconds !== undefined && !(windowSeconds > 0)) throw new TypeError('createBudget: windowSeconds must be positive');
  const now = options.now ?? Date.now;
  const totalMsat = totalSats * 1000;
  const perHostMsat = perHostSats === undefined ? undefined : perHostSats * 1000;
  // Running totals, so that a charge costs the same after a million payments as after one.
  const paid = new Tally();
  const inFlight = new Tally();
  // With a window, the paid charges in the order they were paid, to take them off the totals as they leave it.
  const paidInWindow: SettledCharge[] = [];
  let windowStart = 0; // paidInWindow[windowStart..] are still inside

  function forgetLeftWindow(): void {
    if (windowSeconds === undefined) return;
    const since = now() - windowSeconds * 1000;
    while (windowStart < paidInWindow.length && paidInWindow[windowStart]!.at <= since) {
      const charge = paidInWindow[windowStart++]!;
      paid.add(charge.host, -charge.msat);
    }
    if (windowStart > 1024 && windowStart * 2 > paidInWindow.length) {
      paidInWindow.splice(0, windowStart);
      windowStart = 0;
    }
  }

  return {
    reserve(host, amountMsat) {
      if (!Number.isSafeInteger(amountMsat) || amountMsat <= 0) throw new RangeError('amountMsat must be a positive integer');
      forgetLeftWindow();
      const overall = paid.total + inFlight.total;
      if (overall + amountMsat > totalMsat) {
        throw new L402ClientError(
          'BUDGET_EXCEEDED',
          `Not paid: ${amountMsat / 1000} sats would take the budget past its ${totalSats} sats (${overall / 1000} spent or in flight)`,
          { amountMsat },
        );
      }
      if (perHostMsat !== undefined) {
        const forHost = paid.of(host) + inFlight.of(host);
        if (forHost + amountMsat > perHostMsat) {
          throw new L402ClientError(
            'BUDGET_EXCEEDED',
            `Not paid: ${amountMsat / 1000} sats would take ${host} past its ${perHostSats} sats (${forHost / 1000} spent or in flight)`,
            { amountMsat },
          );
        }
      }
      inFlight.add(host, amountMsat);
      let done = false;
      return {
        commit() {
          if (done) return;
          done = true;
          inFlight.add(host, -amountMsat);
          paid.add(host, amountMsat);
          if (windowSeconds !== undefined) paidInWindow.push({ host, msat: amountMsat, at: now() });
        },
        release() {
          if (done) return;
          done = true;
          inFlight.add(host, -amountMsat);
        },
      };
    },

    credit(host, amountMsat) {
      if (!Number.isSafeInteger(amountMsat) || amountMsat < 0) throw new RangeError('amountMsat must be a whole number, 0 or more');
      forgetLeftWindow();
      const credited = Math.min(amountMsat, paid.of(host));
      if (credited === 0) return 0;
      paid.add(host, -credited);
      // The charges still in the window shrink too, newest first, so that leaving it takes off only what still counts.
      let left = credited;
      for (let i = paidInWindow.length - 1; i >= windowStart && left > 0; i--) {
        const charge = paidInWindow[i]!;
        if (charge.host !== host) continue;
        const taken = Math.min(charge.msat, left);
        charge.msat -= taken;
        left -= taken;
      }
      return credited;
    },

    spent() {
      forgetLeftWindow();
      const byHost: Spending['byHost'] = {};
      for (const [host, msat] of paid.byHost) byHost[host] = { msat, sats: msat / 1000 };
      return { totalMsat: paid.total, totalSats: paid.total / 1000, byHost };
    },

    remainingMsat(host) {
      forgetLeftWindow();
      const overall = totalMsat - paid.total - inFlight.total;
      if (host === undefined || perHostMsat === undefined) return Math.max(0, overall);
      return Math.max(0, Math.min(overall, perHostMsat - paid.of(host) - inFlight.of(host)));
    },
  };
}
