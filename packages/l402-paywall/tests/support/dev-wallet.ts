// A paying client's wallet on a dev node (regtest): it pays with the node,
// makes each invoice it is asked for without an amount (a session's return
// invoice, memo 'refund' unless asked), and looks its invoices up as
// providerWallet does.
import type { DevNode } from 'l402-paywall/backends';
import { providerWallet, type Wallet } from 'l402-paywall/client';

export function devNodeWallet(node: DevNode, returnInvoiceExpirySeconds = 3600): Wallet {
  return {
    network: 'regtest',
    payInvoice: ({ invoice }) => node.pay(invoice),
    createInvoice: ({ memo }) => node.createAmountlessInvoice({ memo: memo ?? 'refund', expirySeconds: returnInvoiceExpirySeconds }),
    lookupInvoice: providerWallet(node).lookupInvoice!,
  };
}
