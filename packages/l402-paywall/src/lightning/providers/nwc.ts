// Nostr Wallet Connect (NIP-47): Alby Hub and any wallet that speaks it, through
// @getalby/sdk's NWCClient (it negotiates NIP-44/NIP-04 from the wallet's info
// event). Every call is bounded by timeoutMs whatever the relay does; the relay
// connection is shared while calls are in flight and closed after a short idle
// spell, so the provider never keeps a process alive on its own.
//
// What NIP-47 cannot do, and what we do instead:
// - pay_invoice takes no fee limit (nor does the SDK 7 request type): the
//   wallet's own budget and fee policy for this connection apply. maxFeeMsat is
//   reported against, not enforced; set a budget on the connection in the wallet.
// - Notifications travel over the relay, not as HTTP webhooks: there is no
//   readWebhook; the service confirms payments by lookupInvoice.
import { Nip47Error, Nip47WalletError, NWCClient } from '@getalby/sdk/nwc';
import { z } from 'zod';
import type { Network } from '../bolt11.js';
import { PaymentFailed, ProviderUnavailable, ProviderConfigError } from '../provider.js';
import type { CreateInvoiceRequest, CreatedInvoice, InvoiceStatus, LightningProvider, PaidInvoice, PaymentStatus } from '../provider.js';
import { checkAmountlessPayment, checkedPreimage, issuedInvoice, Hex32, invoiceToPay } from './checks.js';

/** Relay connections idle this long are closed (the next call reconnects and re-reads the wallet's info event). */
const IDLE_CLOSE_MS = 10_000;

const relayUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return url.protocol === 'wss:' || url.protocol === 'ws:';
  } catch {
    return false;
  }
}, 'each relay= must be a ws:// or wss:// URL');

const ConnectionUri = z.object({
  walletPubkey: z.string().regex(/^[0-9a-fA-F]{64}$/, 'the wallet public key after nostr+walletconnect:// must be 64 hex characters'),
  relays: z.array(relayUrl).min(1, 'it needs at least one relay=wss://… parameter'),
  secret: z.string().regex(/^[0-9a-fA-F]{64}$/, 'secret= must be 64 hex characters'),
});

export interface NwcConnection {
  walletPubkey: string;
  relays: string[];
  secret: string;
}

/**
 * Parses `nostr+walletconnect://<wallet pubkey>?relay=<wss url>&secret=<hex>`.
 * Errors name what is wrong, never the values (the secret spends the wallet's money).
 */
export function parseNwcUrl(url: string): NwcConnection {
  const match = /^nostr\+walletconnect:(?:\/\/)?([^?#]*)\?([^#]*)$/i.exec(url.trim());
  if (!match) {
    throw new ProviderConfigError(
      'NWC_URL',
      "NWC_URL must look like nostr+walletconnect://<wallet pubkey>?relay=wss://…&secret=… (copy it from your wallet's app connections)",
    );
  }
  const query = new URLSearchParams(match[2]);
  const parsed = ConnectionUri.safeParse({ walletPubkey: match[1], relays: query.getAll('relay'), secret: query.get('secret') ?? '' });
  if (!parsed.success) {
    throw new ProviderConfigError('NWC_URL', `NWC_URL is not a usable Nostr Wallet Connect URI: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  }
  const { walletPubkey, relays, secret } = parsed.data;
  return { walletPubkey: walletPubkey.toLowerCase(), relays, secret: secret.toLowerCase() };
}

// NIP-47 transaction as wallets send it; fields beyond these are ignored.
// Empty strings and nulls stand for "absent" in the wild.
const Transaction = z.object({
  type: z.enum(['incoming', 'outgoing']).optional(),
  state: z.enum(['pending', 'settled', 'expired', 'failed', 'accepted']).optional(),
  invoice: z.string().nullish(),
  payment_hash: Hex32,
  preimage: z.string().nullish(),
  amount: z.number().int().nonnegative(),
  fees_paid: z.number().int().nonnegative().nullish(),
  settled_at: z.number().nullish(),
});
type Transaction = z.infer<typeof Transaction>;
const MadeInvoice = Transaction.extend({ invoice: z.string().min(1) });
const PayResult = z.object({ preimage: Hex32, fees_paid: z.number().int().nonnegative().nullish() });
const BalanceResult = z.object({ balance: z.number().int().nonnegative() });

/** Codes with which a wallet refuses a payment it did not make (NIP-47 error codes). */
const PAYMENT_REFUSALS = new Set(['INSUFFICIENT_BALANCE', 'QUOTA_EXCEEDED', 'PAYMENT_FAILED', 'RATE_LIMITED', 'NOT_IMPLEMENTED']);
const CREDENTIAL_REFUSALS = new Set(['UNAUTHORIZED', 'RESTRICTED']);

class DeadlineExceeded extends Error {}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded()), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Node 20 has no global WebSocket (Node 22, browsers and workers do); nostr-tools (inside the SDK) looks it up when it
 * connects. On Node 20 install `ws`. Idempotent: a second call finds the global the first one set.
 */
async function ensureWebSocket(): Promise<void> {
  if (typeof globalThis.WebSocket === 'undefined') {
    const { WebSocket } = await import('ws');
    (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
  }
}

export function createNwcProvider(options: { url: string; network: Network; timeoutMs: number; idleCloseMs?: number }): LightningProvider & { close(): void } {
  const connection = parseNwcUrl(options.url);
  const { timeoutMs, idleCloseMs = IDLE_CLOSE_MS } = options;
  let session: { client: NWCClient; calls: number; idle?: ReturnType<typeof setTimeout> } | undefined;
  // Looked for once per provider, on its first call (a constructor cannot await).
  let webSocketReady: Promise<void> | undefined;

  function discard(current: NonNullable<typeof session>) {
    if (session === current) session = undefined;
    clearTimeout(current.idle);
    current.client.close();
  }

  /** Runs one NIP-47 call on the shared connection, bounded by timeoutMs, and maps the SDK's errors. */
  async function call<T>(
    method: string,
    run: (client: NWCClient) => Promise<unknown>,
    schema: z.ZodType<T>,
    onWalletError?: (code: string, message: string) => T,
  ): Promise<T> {
    await (webSocketReady ??= ensureWebSocket());
    const current = (session ??= {
      client: new NWCClient({ relayUrls: connection.relays, walletPubkey: connection.walletPubkey, secret: connection.secret }),
      calls: 0,
    });
    clearTimeout(current.idle);
    current.calls++;
    let answer: unknown;
    try {
      answer = await withDeadline(run(current.client), timeoutMs);
    } catch (error) {
      if (error instanceof Nip47WalletError) {
        if (CREDENTIAL_REFUSALS.has(error.code)) {
          throw new ProviderConfigError(
            'NWC_URL',
            `NWC_URL: the wallet refused this connection for ${method} (${error.code}); create a new app connection with the receive and pay permissions and set NWC_URL to it`,
          );
        }
        if (onWalletError) return onWalletError(error.code, error.message);
        throw new ProviderUnavailable(`NWC wallet answered ${method} with ${error.code}: ${error.message}`, { cause: error });
      }
      // No answer in time, relay unreachable, unreadable reply: the connection may be bad, start afresh next time.
      discard(current);
      if (error instanceof DeadlineExceeded) throw new ProviderUnavailable(`NWC wallet did not answer ${method} within ${timeoutMs} ms`);
      if (error instanceof Nip47Error && error.code === 'UNSUPPORTED_ENCRYPTION') {
        throw new ProviderConfigError('NWC_URL', 'NWC_URL: the wallet speaks neither NIP-44 nor NIP-04 encryption; it cannot be used');
      }
      throw new ProviderUnavailable(`NWC ${method} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    } finally {
      current.calls--;
      if (current.calls === 0 && session === current) {
        current.idle = setTimeout(() => discard(current), idleCloseMs);
        current.idle.unref?.();
      }
    }
    const parsed = schema.safeParse(answer);
    if (!parsed.success) throw new ProviderUnavailable(`NWC wallet sent a malformed ${method} answer: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return parsed.data;
  }

  /** lookup_invoice, or null when the wallet does not know the hash. */
  const lookup = (paymentHash: string) =>
    call(
      'lookup_invoice',
      (c) => c.lookupInvoice({ payment_hash: paymentHash }),
      Transaction.nullable(),
      (code, message) => {
        if (code === 'NOT_FOUND') return null;
        throw new ProviderUnavailable(`NWC wallet answered lookup_invoice with ${code}: ${message}`);
      },
    ).then((tx) => {
      if (tx && tx.payment_hash !== paymentHash) throw new ProviderUnavailable('NWC wallet answered lookup_invoice about another payment hash');
      return tx;
    });

  const settledPreimage = (tx: Transaction) => {
    const preimage = checkedPreimage('NWC wallet', tx.payment_hash, tx.preimage);
    if (!preimage) throw new ProviderUnavailable('NWC wallet reports the payment settled without its preimage');
    return preimage;
  };

  /** pay_invoice; `amountMsat` (NIP-47's `amount`) only for an invoice without an amount. */
  async function pay(invoice: string, amountMsat?: number): Promise<PaidInvoice> {
    const { paymentHash } = invoiceToPay(invoice);
    const paid = await call(
      'pay_invoice',
      (c) => c.payInvoice({ invoice, ...(amountMsat === undefined ? {} : { amount: amountMsat }) }),
      PayResult,
      (code, message) => {
        if (PAYMENT_REFUSALS.has(code)) throw new PaymentFailed(`NWC wallet did not pay (${code}): ${message}`);
        // INTERNAL, OTHER, unknown codes: the wallet may have sent it; lookupPayment tells.
        throw new ProviderUnavailable(`NWC wallet answered pay_invoice with ${code}: ${message}`);
      },
    );
    const preimage = checkedPreimage('NWC wallet', paymentHash, paid.preimage);
    if (!preimage) throw new ProviderUnavailable('NWC wallet reports the invoice paid without its preimage');
    return { paymentHash, preimage, feeMsat: paid.fees_paid ?? 0 };
  }

  return {
    name: 'nwc',

    async createInvoice(request: CreateInvoiceRequest): Promise<CreatedInvoice> {
      if (!Number.isSafeInteger(request.amountMsat) || request.amountMsat <= 0) throw new RangeError('amountMsat must be a positive integer');
      const descriptionHash = request.descriptionHash?.toLowerCase();
      const params = {
        amount: request.amountMsat,
        ...(descriptionHash ? { description_hash: descriptionHash } : { description: request.memo ?? '' }),
        ...(request.expirySeconds !== undefined && { expiry: request.expirySeconds }),
      };
      const made = await call('make_invoice', (c) => c.makeInvoice(params), MadeInvoice);
      // The wallet is trusted with money, not with arithmetic: what it issued must be what we asked for.
      return issuedInvoice('NWC wallet', made.invoice, {
        amountMsat: request.amountMsat,
        paymentHash: made.payment_hash,
        descriptionHash,
        network: options.network,
      });
    },

    async lookupInvoice(paymentHash: string): Promise<InvoiceStatus | null> {
      const hash = paymentHash.toLowerCase();
      const tx = await lookup(hash);
      if (!tx || tx.type === 'outgoing') return null;
      const settled = tx.state ? tx.state === 'settled' : Boolean(tx.settled_at);
      if (!settled) return { paymentHash: hash, settled: false, amountMsat: tx.amount };
      return { paymentHash: hash, settled: true, preimage: settledPreimage(tx), amountMsat: tx.amount };
    },

    async payInvoice({ invoice, maxFeeMsat }): Promise<PaidInvoice> {
      void maxFeeMsat; // NIP-47 has no fee limit: the connection's budget in the wallet bounds what it spends.
      // Refused here: a wallet answers an invoice without an amount with a code that reads as "outcome unknown".
      if (invoiceToPay(invoice).amountMsat === null) throw new PaymentFailed('This invoice names no amount; pay it with payAmountlessInvoice');
      return pay(invoice);
    },

    async payAmountlessInvoice({ invoice, amountMsat, maxFeeMsat }): Promise<PaidInvoice> {
      void maxFeeMsat;
      checkAmountlessPayment(invoice, amountMsat);
      return pay(invoice, amountMsat);
    },

    async lookupPayment(paymentHash: string): Promise<PaymentStatus | null> {
      const hash = paymentHash.toLowerCase();
      const tx = await lookup(hash);
      if (!tx || tx.type === 'incoming') return null;
      const fee = tx.fees_paid ?? undefined;
      const state = tx.state ?? (tx.settled_at ? 'settled' : 'pending');
      if (state === 'settled') return { paymentHash: hash, state: 'succeeded', preimage: settledPreimage(tx), ...(fee !== undefined && { feeMsat: fee }) };
      if (state === 'failed' || state === 'expired') return { paymentHash: hash, state: 'failed' };
      return { paymentHash: hash, state: 'pending' };
    },

    async balance() {
      const { balance } = await call('get_balance', (c) => c.getBalance(), BalanceResult);
      return { balanceMsat: balance };
    },

    /** Closes the relay connection now (it also closes itself when idle). */
    close() {
      if (session) discard(session);
    },
  };
}
