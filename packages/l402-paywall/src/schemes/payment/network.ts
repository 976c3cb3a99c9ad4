import type { LightningNetwork } from './charge.js';

/**
 * The network of a BOLT 11 invoice, by its human-readable prefix, as the
 * Lightning method names it; undefined for testnet (the draft has no name for
 * it) or anything that is not an invoice: then no Payment challenge (charge
 * or session) is offered for it, and a session deposit on it is not credited.
 */
export function invoiceNetwork(invoice: string): LightningNetwork | undefined {
  // BOLT 11's bech32 in one case (what the charge request takes), before the prefix is looked at.
  if (invoice.length > 4096 || !/^(?:ln[0-9a-z]+|LN[0-9A-Z]+)$/.test(invoice)) return undefined;
  const lower = invoice.slice(0, 8).toLowerCase();
  if (lower.startsWith('lnbcrt')) return 'regtest';
  if (lower.startsWith('lntbs')) return 'signet';
  if (lower.startsWith('lnbc')) return 'mainnet';
  return undefined;
}
