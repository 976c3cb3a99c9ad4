// @ts-check
// What the tier changes on this page: how much history the stats cover (free
// owners: the last 7 days; Pro owners and admins: all of it) and the CSV
// export, which Pro owners and admins may download (a free owner gets the
// server's 403 PRO_REQUIRED, explained in the status bar).
import { download } from './api.js';
import { byId } from '../dom.js';
import { showError, showStatus } from './status.js';

/** @typedef {import('../../lib/service/records/stats.js').Stats} Stats */

/**
 * What the figures cover, in words.
 * @param {import('../json-answer.js').Unchecked<Stats['scope']>} scope
 */
export function describeScope(scope) {
  if (scope.tier !== 'admin' && Array.isArray(scope.addresses) && scope.addresses.length === 0) {
    return 'No Lightning Address linked yet: link the ones you receive payments at (below) to see their statistics.';
  }
  if (scope.tier === 'admin') return 'Full history of every owner (admin).';
  if (scope.tier === 'pro') return 'Full history of your linked addresses (Pro).';
  return 'The last 7 days of your linked addresses (free). Full history and CSV export come with Pro.';
}

/** Fetches the CSV with the login's Bearer header and saves it under the server's file name. */
export async function downloadCsv() {
  const button = byId('csv', HTMLButtonElement);
  button.disabled = true;
  const answer = await download('/api/stats?format=csv', { auth: true });
  button.disabled = false;
  if (!answer.ok) return showError(answer);
  const disposition = answer.headers.get('content-disposition') ?? '';
  const filename = /filename="([^"]+)"/.exec(disposition)?.[1] ?? 'payments.csv';
  const url = URL.createObjectURL(answer.blob);
  const anchor = document.createElement('a');
  anchor.href = url;
  anchor.download = filename;
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  showStatus(`Downloaded ${filename}`, 'info');
}
