// An owner's Lightning Address server on 127.0.0.1 for tests: LUD-16/06/12 with
// behaviour chosen per test, honest or hostile. Honest invoices come from a dev
// node on the store you pass, so a service dev node on the same store can pay
// them and `node.balance()` shows what arrived.
//
//   const owner = await startOwnerServer({ store });          // honest, commentAllowed 0
//   owner.address('alice')      // 'alice@127.0.0.1:<port>'
//   owner.setBehaviour('wrong-description-hash');
//   owner.setBehaviour('honest', { commentAllowed: 64 });
//   owner.requests              // every request: { stage, username, amountMsat?, comment? }
//   await owner.close();
//
// Behaviours (the misbehaving step in brackets):
//   honest                   real invoice for exactly the amount, h = SHA256(metadata)
//   invoice-more-than-asked  [callback] invoice for amount + 1000 msat
//   invoice-less-than-asked  [callback] invoice for amount - 1000 msat (underpriced)
//   zero-amount              [callback] an invoice without an amount (the payer would choose it)
//   tampered-payment-hash    [callback] the owner's signed invoice (payee key `n` included) with its payment hash changed afterwards
//   unknown-payment-hash     [callback] a correctly signed invoice for a payment hash nobody holds the preimage of: no payment can complete
//   wrong-description-hash   [callback] h = SHA256 of something else
//   expired-invoice          [callback] invoice dated two hours ago, expiry one hour
//   wrong-network            [callback] an invoice for settings.network (default bitcoin: lnbc)
//   redirect                 [lnurlp, or settings.stage] 302 to settings.redirectTo (default http://10.0.0.1/)
//   private-callback         [lnurlp] callback URL is settings.redirectTo (default https://169.254.169.254/latest/meta-data/)
//   slow                     [lnurlp, or settings.stage] never answers
//   huge                     [lnurlp, or settings.stage] 200 with an endless body
//   error-status             [callback, or settings.stage] 200 {status:"ERROR", reason}
//   server-error             [lnurlp, or settings.stage] 500 {status:"ERROR", reason}
import diagnostics from 'node:diagnostics_channel';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { concatBytes, hexToBytes } from '@noble/hashes/utils.js';
import { bech32 } from '@scure/base';
import { encodeInvoice, type Network } from 'l402-paywall/lightning';
import { createDevNode, type DevNode } from 'l402-paywall/backends';
import { createMemoryStore } from '../../lib/store/index.js';
import type { KeyValueStore } from '../../lib/store/types.js';

export type OwnerBehaviour =
  | 'honest'
  | 'invoice-more-than-asked'
  | 'invoice-less-than-asked'
  | 'zero-amount'
  | 'tampered-payment-hash'
  | 'unknown-payment-hash'
  | 'wrong-description-hash'
  | 'expired-invoice'
  | 'wrong-network'
  | 'redirect'
  | 'private-callback'
  | 'slow'
  | 'huge'
  | 'error-status'
  | 'server-error';

export interface OwnerSettings {
  /** LUD-12 commentAllowed in the pay request (0 = no comments). Default 0. */
  commentAllowed: number;
  minSendable: number;
  maxSendable: number;
  /** Where `redirect` sends and `private-callback` points. */
  redirectTo?: string;
  /** Which step misbehaves, for behaviours that can hit either. */
  stage?: 'lnurlp' | 'callback';
  /** The reason in `error-status` / `server-error` answers. */
  reason: string;
  /** The network of `wrong-network` invoices. */
  network?: Exclude<Network, 'regtest'>;
}

export interface OwnerRequest {
  stage: 'lnurlp' | 'callback' | 'other';
  username: string;
  path: string;
  amountMsat?: number;
  comment?: string;
  /** The Host header the client sent. */
  host?: string;
}

export interface OwnerServer {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  /** `<username>@127.0.0.1:<port>` */
  address(username: string): string;
  /** Every request received, in order. */
  readonly requests: OwnerRequest[];
  setBehaviour(behaviour: OwnerBehaviour, settings?: Partial<OwnerSettings>): void;
  /** The owner's dev node: its invoices are the honest ones; balance() is what the owner received. */
  node: DevNode;
  /** The metadata string served for a username (its SHA256 is the honest `h`). */
  metadata(username: string): string;
  close(): Promise<void>;
}

const DEFAULTS: OwnerSettings = { commentAllowed: 0, minSendable: 1000, maxSendable: 100_000_000_000, reason: 'The owner refuses' };

export async function startOwnerServer(
  options: { store?: KeyValueStore; behaviour?: OwnerBehaviour; settings?: Partial<OwnerSettings>; privateKey?: string } = {},
): Promise<OwnerServer> {
  const privateKey = options.privateKey ?? bytesToHex(randomBytes(32));
  const node = createDevNode({ store: options.store ?? createMemoryStore(), privateKey });
  let behaviour: OwnerBehaviour = options.behaviour ?? 'honest';
  let settings: OwnerSettings = { ...DEFAULTS, ...options.settings };
  const requests: OwnerRequest[] = [];
  const sockets = new Set<Socket>();
  let origin = '';
  const metadata = (username: string) =>
    JSON.stringify([
      ['text/plain', `Payment to ${username}`],
      ['text/identifier', `${username}@${origin.replace(/^http:\/\//, '')}`],
    ]);

  const misbehavesAt = (stage: 'lnurlp' | 'callback', defaultStage: 'lnurlp' | 'callback') => (settings.stage ?? defaultStage) === stage;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', origin);
    const lnurlp = /^\/\.well-known\/lnurlp\/([^/]+)$/.exec(url.pathname);
    const callback = /^\/callback\/([^/]+)$/.exec(url.pathname);
    const username = decodeURIComponent((lnurlp ?? callback)?.[1] ?? '');
    const stage: OwnerRequest['stage'] = lnurlp ? 'lnurlp' : callback ? 'callback' : 'other';
    const amount = url.searchParams.get('amount');
    const comment = url.searchParams.get('comment');
    requests.push({
      stage,
      username,
      path: url.pathname + url.search,
      ...(amount !== null ? { amountMsat: Number(amount) } : {}),
      ...(comment !== null ? { comment } : {}),
      ...(req.headers.host ? { host: req.headers.host } : {}),
    });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'access-control-allow-origin': '*' });
      res.end(JSON.stringify(body));
    };
    if (stage === 'other') return send(404, { status: 'ERROR', reason: 'Not found' });

    const here = stage;
    if (behaviour === 'slow' && misbehavesAt(here, 'lnurlp')) return; // never answers; close() ends the socket
    if (behaviour === 'redirect' && misbehavesAt(here, 'lnurlp')) {
      res.writeHead(302, { location: settings.redirectTo ?? 'http://10.0.0.1/' });
      return void res.end();
    }
    if (behaviour === 'huge' && misbehavesAt(here, 'lnurlp')) return streamForever(res);
    if (behaviour === 'server-error' && misbehavesAt(here, 'lnurlp')) return send(500, { status: 'ERROR', reason: settings.reason });
    if (behaviour === 'error-status' && misbehavesAt(here, 'callback')) return send(200, { status: 'ERROR', reason: settings.reason });

    if (stage === 'lnurlp') {
      const callbackUrl =
        behaviour === 'private-callback'
          ? (settings.redirectTo ?? 'https://169.254.169.254/latest/meta-data/')
          : `${origin}/callback/${encodeURIComponent(username)}`;
      return send(200, {
        tag: 'payRequest',
        callback: callbackUrl,
        minSendable: settings.minSendable,
        maxSendable: settings.maxSendable,
        metadata: metadata(username),
        ...(settings.commentAllowed > 0 ? { commentAllowed: settings.commentAllowed } : {}),
      });
    }

    const amountMsat = Number(amount);
    if (!Number.isSafeInteger(amountMsat) || amountMsat < settings.minSendable || amountMsat > settings.maxSendable)
      return send(400, { status: 'ERROR', reason: 'amount out of range' });
    if (comment !== null && comment.length > settings.commentAllowed) return send(400, { status: 'ERROR', reason: 'comment too long' });
    const honestHash = bytesToHex(sha256(utf8ToBytes(metadata(username))));
    let pr: string;
    switch (behaviour) {
      case 'invoice-more-than-asked':
        pr = (await node.createInvoice({ amountMsat: amountMsat + 1000, descriptionHash: honestHash })).invoice;
        break;
      case 'invoice-less-than-asked':
        pr = (await node.createInvoice({ amountMsat: amountMsat - 1000, descriptionHash: honestHash })).invoice;
        break;
      case 'zero-amount':
      case 'unknown-payment-hash':
        pr = encodeInvoice(
          {
            network: 'regtest',
            ...(behaviour === 'zero-amount' ? {} : { amountMsat }),
            timestamp: Math.floor(Date.now() / 1000),
            expirySeconds: 3600,
            paymentHash: bytesToHex(sha256(randomBytes(32))),
            paymentSecret: bytesToHex(randomBytes(32)),
            descriptionHash: honestHash,
          },
          privateKey,
        );
        break;
      case 'tampered-payment-hash':
        pr = tamperedPaymentHash((await node.createInvoice({ amountMsat, descriptionHash: honestHash })).invoice, privateKey);
        break;
      case 'wrong-description-hash':
        pr = (await node.createInvoice({ amountMsat, descriptionHash: bytesToHex(sha256(utf8ToBytes('something else'))) })).invoice;
        break;
      case 'expired-invoice':
      case 'wrong-network':
        pr = encodeInvoice(
          {
            network: behaviour === 'wrong-network' ? (settings.network ?? 'bitcoin') : 'regtest',
            amountMsat,
            timestamp: Math.floor(Date.now() / 1000) - (behaviour === 'expired-invoice' ? 7200 : 0),
            expirySeconds: 3600,
            paymentHash: bytesToHex(sha256(randomBytes(32))),
            paymentSecret: bytesToHex(randomBytes(32)),
            descriptionHash: honestHash,
          },
          bytesToHex(randomBytes(32)),
        );
        break;
      default:
        pr = (await node.createInvoice({ amountMsat, descriptionHash: honestHash })).invoice;
    }
    send(200, { pr, routes: [] });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ERROR', reason: String(error) }));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  origin = `http://127.0.0.1:${port}`;

  return {
    url: origin,
    port,
    address: (username) => `${username}@127.0.0.1:${port}`,
    requests,
    setBehaviour(next, overrides = {}) {
      behaviour = next;
      settings = { ...DEFAULTS, ...options.settings, ...overrides };
    },
    node,
    metadata,
    close: () =>
      new Promise<void>((done) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => done());
      }),
  };
}

// 16 KiB chunks until the client hangs up.
function streamForever(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(16 * 1024, 0x20);
  const pump = () => {
    while (!res.destroyed && res.write(chunk));
    if (!res.destroyed) res.once('drain', pump);
  };
  res.on('close', () => res.removeAllListeners('drain'));
  pump();
}

/**
 * Every client socket this process opens while recording (through node:net, so
 * node:http(s) and fetch alike), with the address each connected to: proof that
 * a refused fetch never reached the network.
 */
export function recordOutgoingSockets(): { readonly opened: number; readonly connectedTo: string[]; stop(): void } {
  const connectedTo: string[] = [];
  let opened = 0;
  const onSocket = (message: unknown) => {
    const { socket } = message as { socket: Socket };
    opened++;
    socket.once('connect', () => connectedTo.push(socket.remoteAddress ?? '?'));
  };
  diagnostics.subscribe('net.client.socket', onSocket);
  return {
    get opened() {
      return opened;
    },
    connectedTo,
    stop: () => diagnostics.unsubscribe('net.client.socket', onSocket),
  };
}

// BOLT 11 by hand, for the one invoice the encoder will not make: signed with
// the payee key in `n` (so a decoder must verify the signature against it),
// then its payment hash replaced. Amount, description hash and expiry stay right.
function tamperedPaymentHash(invoice: string, privateKeyHex: string): string {
  const { prefix, words } = bech32.decode(invoice as `${string}1${string}`, false);
  const data = words.slice(0, -104); // without the 65-byte signature
  const payee = secp256k1.getPublicKey(hexToBytes(privateKeyHex), true);
  const payeeWords = bech32.toWords(payee);
  const signed = [...data, 19, payeeWords.length >> 5, payeeWords.length & 31, ...payeeWords];
  const sig = secp256k1.sign(sha256(concatBytes(utf8ToBytes(prefix), wordsToPaddedBytes(signed))), hexToBytes(privateKeyHex), {
    prehash: false,
    format: 'recovered',
  });
  const sigWords = bech32.toWords(concatBytes(sig.subarray(1), sig.subarray(0, 1)));
  // The `p` field: walk the tagged fields after the 7-word timestamp.
  const tampered = signed.slice();
  for (let at = 7; at < tampered.length; ) {
    const length = tampered[at + 1]! * 32 + tampered[at + 2]!;
    if (tampered[at] === 1) {
      tampered.splice(at + 3, length, ...bech32.toWords(sha256(randomBytes(32))));
      return bech32.encode(prefix, [...tampered, ...sigWords], false);
    }
    at += 3 + length;
  }
  throw new Error('the invoice has no payment hash');
}

function wordsToPaddedBytes(words: number[]): Uint8Array {
  const bytes: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const word of words) {
    buffer = (buffer << 5) | word;
    bits += 5;
    while (bits >= 8) {
      bits -= 8;
      bytes.push((buffer >> bits) & 0xff);
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) bytes.push((buffer << (8 - bits)) & 0xff);
  return Uint8Array.from(bytes);
}
