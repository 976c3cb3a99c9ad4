// A Nostr Wallet Connect wallet for fetchWithL402 (Alby Hub and any NIP-47
// wallet), through the NWC backend. NIP-47 takes no fee limit: the budget
// set on the connection in the wallet bounds what it spends. Its make_invoice
// needs an amount, so this wallet makes no return invoice for prepaid sessions.
import type { Network } from '../lightning/bolt11.js';
import { createNwcProvider } from '../lightning/providers/nwc.js';
import type { Wallet } from './options.js';
import { providerWallet } from './wallets.js';

export interface NwcWalletOptions {
  /** nostr+walletconnect://<wallet pubkey>?relay=wss://…&secret=… (a connection with the pay_invoice permission; make_invoice too for createInvoice). */
  url: string;
  /** Default bitcoin. */
  network?: Network;
  /** Per wallet call; default 30000 ms (a payment can take a while to route). */
  timeoutMs?: number;
}

export function nwcWallet(options: NwcWalletOptions): Wallet & { close(): void } {
  const network = options.network ?? 'bitcoin';
  const provider = createNwcProvider({ url: options.url, network, timeoutMs: options.timeoutMs ?? 30_000 });
  const wallet = providerWallet(provider, network, {
    backend: 'NWC wallet',
    noAmountlessInvoices: "NIP-47's make_invoice requires an amount (wallets such as Alby Hub refuse less than 1 sat)",
  });
  return { ...wallet, close: () => provider.close() };
}
