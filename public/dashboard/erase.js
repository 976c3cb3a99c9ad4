// @ts-check
// The right to erasure: a second QR code, signed by the wallet whose data
// goes. The signature is the consent; the server deletes when the wallet
// signs, and the page only learns the counts.
import { fields } from '../json-answer.js';
import { api } from './api.js';
import { readChallenge, runChallenge } from './challenge.js';
import { byId } from '../dom.js';
import { formatCount } from './format.js';
import { showError, showStatus } from './status.js';

let stopPolling = () => {};
/** Counts the erasure codes asked for and stopped: an answer that arrives after a stop is not shown. */
let codesAskedFor = 0;

/** Stops waiting for the wallet and puts the section back as it was. */
export function stopErase() {
  codesAskedFor++;
  stopPolling();
  stopPolling = () => {};
  byId('erase-challenge').hidden = true;
  byId('erase-start').hidden = false;
}

/**
 * Shows the erasure code and waits for the wallet's signature.
 * @param {(message: string) => void} erased called with the counts, in words, once the data is gone (the login with it)
 */
export async function startErase(erased) {
  stopErase();
  const thisCode = codesAskedFor;
  const button = byId('erase-start', HTMLButtonElement);
  button.disabled = true;
  const answer = await api('/api/delete-data', { method: 'POST' });
  button.disabled = false;
  if (thisCode !== codesAskedFor) return; // logged out meanwhile
  const challenge = answer.ok ? readChallenge(answer) : null;
  if (!answer.ok || !challenge)
    return showError(answer.ok ? { error: 'The server sent a code this page does not understand', code: 'UNEXPECTED_ANSWER' } : answer);
  button.hidden = true;
  showStatus('Scan the code with your wallet to confirm the deletion', 'info');
  stopPolling = runChallenge('erase', challenge, answer.headers, '/api/delete-data', {
    signed: (signed) => {
      stopErase();
      /** @type {import('../json-answer.js').Unchecked<import('../../lib/service/accounts/erasure.js').ErasureCounts>} */
      const deleted = fields(signed.deleted);
      erased(
        `Deleted ${formatCount(deleted.payments)} payment records, ${formatCount(deleted.links)} linked addresses and ${formatCount(deleted.sessions)} logins.`,
      );
    },
    expired: (message) => {
      stopErase();
      showStatus(message, 'error', 'CHALLENGE_ENDED');
    },
    failed: (failure) => {
      stopErase();
      showError(failure);
    },
  });
}

/** Only the page stops waiting: a wallet that already has the code can still sign it, and that signature is the consent. */
export function cancelErase() {
  stopErase();
  showStatus('Stopped waiting for the wallet', 'info');
}
