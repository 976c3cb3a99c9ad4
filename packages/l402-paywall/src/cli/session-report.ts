// What the command line and the MCP server say on stderr of a run's prepaid
// sessions: each deposit as it is paid, each close (the refund the server
// claims beside what the wallet itself received), and what the run spent,
// which is what the wallet paid minus what it received back: the budget
// counts a refund back only once the wallet has seen it.
import type { Budget } from '../client/budget.js';
import type { ClosedSession, SessionPayment } from '../client/sessions.js';
import { sats } from './settings.js';

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
