/// <reference types="node" />
// The prepaid sessions of a command line run or of the MCP server: the store
// their flags make, the interruption that still closes them, and what they say
// on stderr of them: each deposit as it is paid, each close (the refund the server
// claims beside what the wallet itself received), and what the run spent,
// which is what the wallet paid minus what it received back: the budget
// counts a refund back only once the wallet has seen it.
import type { Budget } from '../client/budget.js';
import { createSessions, type ClientSessions, type ClosedSession, type SessionPayment } from '../client/sessions.js';
import { DEFAULT_MAX_SATS, failedPaymentExit, sats, sessionBudget, sessionFlags, UsageError, walletWhenNeeded, wholeNumber } from './settings.js';

/** The options of a command that can open prepaid sessions: the flag that turns them on, and --max-deposit-sats. */
export const DEPOSIT_OPTION = { 'max-deposit-sats': { type: 'string' } } as const;

/**
 * The run's sessions store when `on` (its flag, `--session` or `--sessions`,
 * given): each deposit said with `say` as it is paid, none dearer than
 * --max-deposit-sats (default 20 x --max-sats, the draft's recommended deposit).
 */
export function sessionStore(
  values: { 'max-sats'?: string; 'max-deposit-sats'?: string },
  on: boolean,
  flag: string,
  say: (line: string) => void,
): ClientSessions | undefined {
  if (values['max-deposit-sats'] !== undefined && !on) throw new UsageError(`--max-deposit-sats goes with ${flag}`);
  if (!on) return undefined;
  const maxDepositSats = wholeNumber(values['max-deposit-sats'], '--max-deposit-sats', wholeNumber(values['max-sats'], '--max-sats', DEFAULT_MAX_SATS) * 20);
  return createSessions({ maxDepositSats, onPayment: (payment) => say(depositText(payment)) });
}

/** Closes every session of the run, says how each close went (`line`) and what the run spent in all (only refunds the wallet received count back). */
export async function closeAndAccount(
  sessions: ClientSessions,
  budget: Budget,
  say: (line: string) => void,
  line = (closed: ClosedSession) => `session ${closed.sessionId} ${refundText(closed)}`,
): Promise<void> {
  const closed = await sessions.closeAll();
  for (const session of closed) say(line(session));
  say(spentText(budget, closed));
}

/**
 * Ctrl-C (or SIGTERM) while a run holds sessions: aborts `signal` (the request
 * or call under way), so the run ends through its close of the sessions
 * rather than leave their refunds to the server's idle timeout. `release()`
 * once closed: a signal during the close is absorbed rather than cut it short.
 */
export function interruptible(sessions: ClientSessions | undefined): { signal: AbortSignal; release(): void } {
  const interrupt = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => interrupt.abort(signal);
  const signals = sessions ? (['SIGINT', 'SIGTERM'] as const) : [];
  for (const signal of signals) process.once(signal, onSignal);
  return {
    signal: interrupt.signal,
    release: () => {
      for (const signal of signals) process.off(signal, onSignal);
    },
  };
}

/** A deposit paid: opening a session, or topping it up. */
export function depositText(payment: SessionPayment): string {
  const what = payment.action === 'open' ? 'deposit' : 'top-up';
  return `session ${payment.sessionId}: ${what} paid, ${sats(payment.amountMsat)} (routing fee ${sats(payment.feeMsat)})`;
}

/** What the server said of a closed session's refund, and what the wallet received; `after` follows "closed" (the MCP server's lines say "closed: refund"). */
export function refundText(closed: ClosedSession, after = ','): string {
  const said = closed.refundSats === undefined ? 'no refund said' : `refund ${closed.refundSats} sats (${closed.refundStatus ?? 'status unknown'})`;
  const head = closed.error !== undefined ? `not closed: ${closed.error}` : `closed${after} ${said}`;
  // Why nothing was received is worth saying only where something was to come (a refund claimed, or none said).
  const expected = closed.refundSats !== 0 && closed.refundUnconfirmed !== undefined;
  const seen = closed.refundSeen
    ? `the wallet received ${sats(closed.receivedMsat)}`
    : `the wallet received nothing${expected ? ` (${closed.refundUnconfirmed})` : ''}`;
  return `${head}; ${seen}`;
}

/** The run's account once its sessions are closed: spent in all, paid, and received back (what the budget credited). */
export function spentText(budget: Budget, closed: ClosedSession[]): string {
  const spentMsat = budget.spent().totalMsat;
  const creditedMsat = closed.reduce((sum, session) => sum + session.creditedMsat, 0);
  return `spent in all ${sats(spentMsat)} (paid ${sats(spentMsat + creditedMsat)}, received back ${sats(creditedMsat)})`;
}

/** The flags a paid command line run reads (SESSION_OPTIONS, --session and --max-deposit-sats). */
type RunValues = Parameters<typeof sessionFlags>[0] & { session?: boolean; 'max-deposit-sats'?: string };

/**
 * What a command line run that pays (`l402-paywall <url>`, `l402-paywall
 * tool`) sets up from its flags and environment: stderr lines, the sessions
 * store with --session, the limits, the wallet (chosen when first needed),
 * the budget, the interruption that still closes the sessions; `failed` maps
 * an error to its exit code (failedPaymentExit), and `finish` closes the
 * sessions (saying the refunds and what was spent), then the wallet.
 */
export function paidRun(values: RunValues, io: { env: Record<string, string | undefined>; stderr: NodeJS.WritableStream }) {
  const say = (line: string) => io.stderr.write(`l402-paywall: ${line}\n`);
  // Each deposit and top-up said as it is paid: the run's stderr accounts for every sat that left the wallet.
  const sessions = sessionStore(values, values.session === true, '--session', say);
  // With --session the budget's default must let one deposit through (what it does not buy comes back at the close).
  const flags = sessionFlags(values, sessions?.maxDepositSats ?? 0);
  const { wallet, chosen } = walletWhenNeeded(io.env, flags.dev);
  const budget = sessionBudget(flags);
  // Ctrl-C (or SIGTERM) during a session's request, stream or call aborts it; finish() still closes the session.
  const interrupt = interruptible(sessions);
  return {
    say,
    sessions,
    flags,
    wallet,
    budget,
    signal: interrupt.signal,
    /** Which wallet paid, for stderr (never a secret). */
    description: async () => (await chosen()?.catch(() => undefined))?.description ?? 'the wallet',
    failed: (error: unknown, origin: string) => failedPaymentExit(error, { env: io.env, dev: flags.dev, origin, timeoutMs: flags.timeoutMs, say }),
    async finish(): Promise<void> {
      // Closed however the run ends (a broken stream, a timeout): the refund is not left to the server's idle timeout.
      if (sessions) await closeAndAccount(sessions, budget, say);
      // Only now: a first signal during the close is absorbed (the close does not listen to it) rather than cut it short.
      interrupt.release();
      (await chosen()?.catch(() => undefined))?.wallet.close?.();
    },
  };
}
