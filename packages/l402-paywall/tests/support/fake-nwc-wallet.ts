// A NIP-47 wallet service on a relay, written from the NIP (not from
// @getalby/sdk, so the provider is tested against the wire format, not against
// the SDK's own idea of it). It publishes its info event (kind 13194) with the
// encryptions it speaks, answers kind-23194 requests from its one authorised
// client with kind-23195 replies (`e` tag = request id), encrypted with the
// scheme the request names (NIP-44 v2 or NIP-04), and keeps a small ledger:
// invoices it issued (real BOLT11 signed with its node key), outgoing payments
// and a balance in msat. Tests inject NIP-47 errors, raw (malformed or
// tampered) results, silence, and payments that stay in flight.
import { randomBytes } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { finalizeEvent, generateSecretKey, getPublicKey, nip04, nip44, type Event } from 'nostr-tools';
import WebSocket from 'ws';
import { decodeInvoice, encodeInvoice } from 'l402-paywall/lightning';

export type Nip47Encryption = 'nip04' | 'nip44_v2';
export type Nip47Method = 'get_info' | 'get_balance' | 'make_invoice' | 'lookup_invoice' | 'pay_invoice';

interface Transaction {
  type: 'incoming' | 'outgoing';
  state: 'pending' | 'settled' | 'failed';
  invoice: string;
  description?: string;
  description_hash?: string;
  preimage?: string;
  payment_hash: string;
  amount: number;
  fees_paid: number;
  created_at: number;
  expires_at?: number;
  settled_at?: number;
}

export interface WalletRequest {
  method: string;
  params: Record<string, unknown>;
  encryption: Nip47Encryption;
  fromPubkey: string;
}

export interface FakeNwcWallet {
  /** `nostr+walletconnect://<wallet pubkey>?relay=…&secret=<client secret>` for the provider. */
  connectionUrl: string;
  walletPubkey: string;
  /** The wallet's Lightning node key (it signs the invoices it issues). */
  nodePrivateKey: string;
  balanceMsat: number;
  /** Routing fee the wallet reports for each outgoing payment. */
  feeMsat: number;
  /** Every request decrypted, in order. */
  readonly requests: WalletRequest[];
  /** An incoming payment arrives for one of the wallet's invoices. */
  settle(paymentHash: string): void;
  /** Makes an invoice with this preimage's hash payable (the "network" knows the payee). Returns the hash. */
  addPayable(preimage: string): string;
  /** The next request of `method` gets this NIP-47 error. */
  failNext(method: Nip47Method, code: string, message?: string): void;
  /** The next request of `method` gets this `result` verbatim (malformed or tampered answers). */
  answerNext(method: Nip47Method, result: unknown): void;
  /** Requests of `method` get no answer at all until `speak`. */
  silence(method: Nip47Method): void;
  speak(method: Nip47Method): void;
  /** pay_invoice records the payment as pending and does not answer (a payment stuck in flight). */
  holdPayments: boolean;
  /** Completes a held payment: succeeded (with the payable preimage) or failed. */
  completePayment(paymentHash: string, outcome: 'settled' | 'failed'): void;
  close(): Promise<void>;
}

export interface FakeNwcWalletOptions {
  relayUrl: string;
  /** What the info event advertises; the first is what the wallet prefers. Default both. */
  encryptions?: Nip47Encryption[];
  balanceMsat?: number;
  feeMsat?: number;
}

const METHODS: Nip47Method[] = ['get_info', 'get_balance', 'make_invoice', 'lookup_invoice', 'pay_invoice'];
const now = () => Math.floor(Date.now() / 1000);

export async function startFakeNwcWallet(options: FakeNwcWalletOptions): Promise<FakeNwcWallet> {
  const walletSecret = generateSecretKey();
  const walletPubkey = getPublicKey(walletSecret);
  const clientSecret = generateSecretKey();
  const clientPubkey = getPublicKey(clientSecret);
  const nodePrivateKey = bytesToHex(randomBytes(32));
  const encryptions = options.encryptions ?? ['nip44_v2', 'nip04'];

  const incoming = new Map<string, Transaction>();
  const outgoing = new Map<string, Transaction>();
  const payable = new Map<string, string>(); // hash -> preimage
  const preimages = new Map<string, string>(); // own invoices: hash -> preimage
  const failures = new Map<string, { code: string; message: string }>();
  const rawAnswers = new Map<string, unknown>();
  const silenced = new Set<string>();
  const requests: WalletRequest[] = [];

  const socket = new WebSocket(options.relayUrl);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const publish = (event: Event) => socket.send(JSON.stringify(['EVENT', event]));

  const encrypt = (scheme: Nip47Encryption, pubkey: string, text: string) =>
    scheme === 'nip04' ? nip04.encrypt(walletSecret, pubkey, text) : nip44.encrypt(text, nip44.getConversationKey(walletSecret, pubkey));
  const decrypt = (scheme: Nip47Encryption, pubkey: string, data: string) =>
    scheme === 'nip04' ? nip04.decrypt(walletSecret, pubkey, data) : nip44.decrypt(data, nip44.getConversationKey(walletSecret, pubkey));

  const wallet: FakeNwcWallet = {
    connectionUrl: `nostr+walletconnect://${walletPubkey}?relay=${encodeURIComponent(options.relayUrl)}&secret=${bytesToHex(clientSecret)}`,
    walletPubkey,
    nodePrivateKey,
    balanceMsat: options.balanceMsat ?? 0,
    feeMsat: options.feeMsat ?? 0,
    requests,
    holdPayments: false,
    settle(paymentHash) {
      const tx = incoming.get(paymentHash);
      if (!tx) throw new Error(`fake wallet: no invoice ${paymentHash}`);
      Object.assign(tx, { state: 'settled', preimage: preimages.get(paymentHash), settled_at: now() });
      wallet.balanceMsat += tx.amount;
    },
    addPayable(preimage) {
      const hash = bytesToHex(sha256(hexToBytes(preimage)));
      payable.set(hash, preimage);
      return hash;
    },
    failNext: (method, code, message = `${code} (fake wallet)`) => void failures.set(method, { code, message }),
    answerNext: (method, result) => void rawAnswers.set(method, result),
    silence: (method) => void silenced.add(method),
    speak: (method) => void silenced.delete(method),
    completePayment(paymentHash, outcome) {
      const tx = outgoing.get(paymentHash);
      if (tx?.state !== 'pending') throw new Error(`fake wallet: no payment in flight for ${paymentHash}`);
      if (outcome === 'settled') {
        Object.assign(tx, { state: 'settled', preimage: payable.get(paymentHash), settled_at: now() });
      } else {
        tx.state = 'failed';
        wallet.balanceMsat += tx.amount + tx.fees_paid;
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        socket.close();
      }),
  };

  type Answer = { result: unknown } | { error: { code: string; message: string } } | undefined;

  function pay(params: Record<string, unknown>): Answer {
    let decoded;
    try {
      decoded = decodeInvoice(String(params.invoice));
    } catch (error) {
      return { error: { code: 'OTHER', message: (error as Error).message } };
    }
    // NIP-47: `amount` (msat) pays an invoice without one; an invoice that names its amount is paid that.
    if (decoded.amountMsat === null && typeof params.amount !== 'number') return { error: { code: 'OTHER', message: 'invoice has no amount; give one' } };
    if (decoded.amountMsat !== null && params.amount !== undefined && params.amount !== decoded.amountMsat)
      return { error: { code: 'OTHER', message: 'amount does not match the invoice' } };
    const amount = decoded.amountMsat ?? (params.amount as number);
    const hash = decoded.paymentHash;
    if (outgoing.get(hash)?.state === 'settled') return { error: { code: 'OTHER', message: 'invoice already paid' } };
    if (amount + wallet.feeMsat > wallet.balanceMsat) return { error: { code: 'INSUFFICIENT_BALANCE', message: 'not enough balance' } };
    const tx: Transaction = {
      type: 'outgoing',
      state: 'pending',
      invoice: String(params.invoice),
      payment_hash: hash,
      amount,
      fees_paid: wallet.feeMsat,
      created_at: now(),
    };
    const preimage = payable.get(hash);
    if (!preimage) {
      outgoing.set(hash, { ...tx, state: 'failed' });
      return { error: { code: 'PAYMENT_FAILED', message: 'no route found' } };
    }
    wallet.balanceMsat -= amount + wallet.feeMsat;
    outgoing.set(hash, tx);
    if (wallet.holdPayments) return undefined;
    Object.assign(tx, { state: 'settled', preimage, settled_at: now() });
    return { result: { preimage, fees_paid: wallet.feeMsat } };
  }

  function answer(method: string, params: Record<string, unknown>): Answer {
    switch (method) {
      case 'get_info':
        return {
          result: {
            alias: 'fake-wallet',
            color: '#000000',
            pubkey: walletPubkey,
            network: 'regtest',
            block_height: 1,
            block_hash: '00'.repeat(32),
            methods: METHODS,
          },
        };
      case 'get_balance':
        return { result: { balance: wallet.balanceMsat } };
      case 'make_invoice': {
        // NIP-47: `amount` (msat) is required; like Alby Hub, less than a sat is refused.
        if (!Number.isSafeInteger(params.amount) || (params.amount as number) < 1000)
          return { error: { code: 'OTHER', message: 'the amount must be at least 1 satoshi' } };
        const amount = params.amount as number;
        const preimage = bytesToHex(randomBytes(32));
        const paymentHash = bytesToHex(sha256(hexToBytes(preimage)));
        const descriptionHash = typeof params.description_hash === 'string' && params.description_hash ? params.description_hash : undefined;
        const expiry = typeof params.expiry === 'number' ? params.expiry : 3600;
        const created = now();
        const invoice = encodeInvoice(
          {
            network: 'regtest',
            amountMsat: amount,
            timestamp: created,
            paymentHash,
            paymentSecret: bytesToHex(randomBytes(32)),
            ...(descriptionHash ? { descriptionHash } : { description: String(params.description ?? '') }),
            expirySeconds: expiry,
          },
          nodePrivateKey,
        );
        preimages.set(paymentHash, preimage);
        const tx: Transaction = {
          type: 'incoming',
          state: 'pending',
          invoice,
          description: String(params.description ?? ''),
          ...(descriptionHash && { description_hash: descriptionHash }),
          payment_hash: paymentHash,
          amount,
          fees_paid: 0,
          created_at: created,
          expires_at: created + expiry,
        };
        incoming.set(paymentHash, tx);
        return { result: tx };
      }
      case 'lookup_invoice': {
        const hash = String(params.payment_hash ?? '');
        const tx = incoming.get(hash) ?? outgoing.get(hash);
        return tx ? { result: tx } : { error: { code: 'NOT_FOUND', message: 'invoice not found' } };
      }
      case 'pay_invoice':
        return pay(params);
      default:
        return { error: { code: 'NOT_IMPLEMENTED', message: `${method} is not supported` } };
    }
  }

  function reply(request: Event, scheme: Nip47Encryption, body: unknown) {
    publish(
      finalizeEvent(
        {
          kind: 23195,
          created_at: now(),
          tags: [
            ['e', request.id],
            ['p', request.pubkey],
            ['encryption', scheme],
          ],
          content: encrypt(scheme, request.pubkey, JSON.stringify(body)),
        },
        walletSecret,
      ),
    );
  }

  function onRequest(event: Event) {
    const tagged = event.tags.find((t) => t[0] === 'encryption')?.[1];
    const scheme: Nip47Encryption = tagged === 'nip44_v2' ? 'nip44_v2' : 'nip04';
    let command: { method: string; params: Record<string, unknown> };
    try {
      command = JSON.parse(decrypt(scheme, event.pubkey, event.content));
    } catch {
      return; // not for us, or not readable: a wallet cannot answer what it cannot read
    }
    requests.push({ method: command.method, params: command.params ?? {}, encryption: scheme, fromPubkey: event.pubkey });
    const method = command.method;
    if (silenced.has(method)) return;
    if (event.pubkey !== clientPubkey) {
      return reply(event, scheme, { result_type: method, error: { code: 'UNAUTHORIZED', message: 'no wallet connected for this pubkey' } });
    }
    const failure = failures.get(method);
    if (failure) {
      failures.delete(method);
      return reply(event, scheme, { result_type: method, error: failure });
    }
    if (rawAnswers.has(method)) {
      const result = rawAnswers.get(method);
      rawAnswers.delete(method);
      return reply(event, scheme, { result_type: method, result });
    }
    const outcome = answer(method, command.params ?? {});
    if (outcome) reply(event, scheme, { result_type: method, ...outcome });
  }

  socket.on('message', (data) => {
    const message = JSON.parse(data.toString()) as unknown[];
    if (message[0] === 'EVENT' && message[1] === 'requests') onRequest(message[2] as Event);
  });

  const subscribed = new Promise<void>((resolve) => {
    const onEose = (data: WebSocket.RawData) => {
      const message = JSON.parse(data.toString()) as unknown[];
      if (message[0] === 'EOSE' && message[1] === 'requests') {
        socket.off('message', onEose);
        resolve();
      }
    };
    socket.on('message', onEose);
  });
  socket.send(JSON.stringify(['REQ', 'requests', { kinds: [23194], '#p': [walletPubkey] }]));
  const info = finalizeEvent(
    {
      kind: 13194,
      created_at: now(),
      tags: [
        ['encryption', encryptions.join(' ')],
        ['notifications', 'payment_received'],
      ],
      content: METHODS.join(' '),
    },
    walletSecret,
  );
  const published = new Promise<void>((resolve) => {
    const onOk = (data: WebSocket.RawData) => {
      const message = JSON.parse(data.toString()) as unknown[];
      if (message[0] === 'OK' && message[1] === info.id) {
        socket.off('message', onOk);
        resolve();
      }
    };
    socket.on('message', onOk);
  });
  publish(info);
  await Promise.all([subscribed, published]);
  return wallet;
}
