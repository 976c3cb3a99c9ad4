// What the calls paying with one wallet share, and only they: the invoices it
// paid (so it pays each at most once, however many calls meet it), the
// credentials it bought (the default token store), and the node key each
// host signs its invoices with. Two clients with wallets of their own share
// none of it. The wallet is the caller's object, which is not written on:
// its memory is kept beside it, looked up by it, and goes when it goes.
import type { Wallet } from './options.js';
import { PayeeKeys } from './payee-keys.js';
import { PaidInvoices } from './proofs.js';
import { createTokenStore, type TokenStore } from './tokens.js';

export interface WalletMemory {
  readonly paidInvoices: PaidInvoices;
  readonly payees: PayeeKeys;
  /** The token store of calls that name none. */
  readonly tokens: TokenStore;
}

const memories = new WeakMap<Wallet, WalletMemory>();

/** The memory of this wallet's calls, made at its first call. */
export function memoryOf(wallet: Wallet): WalletMemory {
  let memory = memories.get(wallet);
  if (!memory) {
    memory = { paidInvoices: new PaidInvoices(), payees: new PayeeKeys(), tokens: createTokenStore() };
    memories.set(wallet, memory);
  }
  return memory;
}
