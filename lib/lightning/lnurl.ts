// Paying a Lightning Address: LUD-16 (address -> URL), LUD-06 (payRequest,
// then an invoice from the callback), LUD-12 (comment), LUD-01 (bech32 LNURL).
// An invoice is returned only after it is checked (docs/architecture.md decision 7):
// amount equal to what was asked, description hash equal to SHA256(metadata),
// enough time left, our network. Everything the remote server says is
// validated; every fetch goes through the guarded client (lib/http/outbound.ts).
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { bech32 } from '@scure/base';
import { z } from 'zod';
import type { Config } from '../config.js';
import { guardedGet, OutboundError, RemoteHostError, type OutboundErrorCode, type OutboundPolicy, type Resolver } from '../http/outbound.js';
import { decodeInvoice, InvalidInvoice, type DecodedInvoice, type Network } from 'l402-paywall/lightning';
import { lightningAddressSchema, splitLightningAddress } from 'l402-paywall/lightning';

export type { OutboundPolicy } from '../http/outbound.js';

export type LnurlErrorCode =
  | OutboundErrorCode
  | 'ADDRESS_INVALID'
  | 'INVALID_LNURL'
  | 'REMOTE_ERROR'
  | 'AMOUNT_OUT_OF_RANGE'
  | 'COMMENT_NOT_ALLOWED'
  | 'INVOICE_AMOUNT_MISMATCH'
  | 'DESCRIPTION_HASH_MISMATCH'
  | 'INVOICE_EXPIRED'
  | 'WRONG_NETWORK'
  | 'INVALID_INVOICE';

/** `retryable`: true for transient faults (unreachable, timeout, 5xx); false when the owner's server answers something we will never pay. */
export class LnurlError extends RemoteHostError<LnurlErrorCode> {
  override readonly name = 'LnurlError';
}

export interface AddressInvoice {
  invoice: string;
  decoded: DecodedInvoice;
  paymentHash: string;
  amountMsat: number;
  /** LUD-21: where the payee says whether the invoice is settled (checked to be an http(s) URL, not fetched here). */
  verifyUrl?: string;
}

export interface FetchInvoiceOptions {
  policy: OutboundPolicy;
  /** The network our provider pays on; an invoice for any other is refused. */
  network: Network;
  /** LUD-12 comment; refused (COMMENT_NOT_ALLOWED) when the payee does not take one this long. */
  comment?: string;
  /** The invoice must stay payable at least this long (default 60 s). */
  minExpirySeconds?: number;
  /** Replaces DNS (tests). */
  resolve?: Resolver;
}

const DEFAULT_MIN_EXPIRY_SECONDS = 60;

const RemoteError = z.object({ status: z.string().regex(/^error$/i), reason: z.string().optional() });

const Msat = z
  .union([
    z.number(),
    z
      .string()
      .regex(/^\d{1,16}$/)
      .transform(Number),
  ])
  .pipe(z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER));

const PayRequest = z.object({
  tag: z.literal('payRequest'),
  callback: z.string().url().max(2048),
  minSendable: Msat,
  maxSendable: Msat,
  metadata: z.string().max(64 * 1024),
  commentAllowed: z
    .union([
      z.number(),
      z
        .string()
        .regex(/^\d{1,6}$/)
        .transform(Number),
    ])
    .pipe(z.number().int().nonnegative())
    .optional(),
});

const Metadata = z
  .array(z.tuple([z.string(), z.unknown()]).rest(z.unknown()))
  .refine((entries) => entries.some(([type, value]) => type === 'text/plain' && typeof value === 'string'), 'metadata must carry a text/plain entry');

const CallbackAnswer = z.object({
  pr: z.string().min(1).max(8192),
  verify: z.string().max(2048).optional(),
});

/**
 * LUD-16 -> LUD-06 (+LUD-12 comment): resolves the address, asks for an invoice of
 * exactly amountMsat, checks it (amount equal, description hash == SHA256(metadata
 * string), not expired with a margin, network), or throws LnurlError.
 */
export async function fetchInvoiceForAddress(address: string, amountMsat: number, options: FetchInvoiceOptions): Promise<AddressInvoice> {
  const { policy, network, comment } = options;
  const minExpirySeconds = options.minExpirySeconds ?? DEFAULT_MIN_EXPIRY_SECONDS;
  if (!Number.isSafeInteger(amountMsat) || amountMsat <= 0)
    throw new LnurlError('AMOUNT_OUT_OF_RANGE', 'The amount must be a positive integer of millisatoshis', false);

  const payUrl = lightningAddressUrl(address, policy.allowLoopback);
  const payRequest = parseAnswer(await get(payUrl, options), PayRequest, 'pay request');
  const metadataEntries = Metadata.safeParse(safeJson(payRequest.metadata));
  if (!metadataEntries.success) throw new LnurlError('BAD_RESPONSE', `${address}: metadata is not a LUD-06 metadata array with a text/plain entry`, false);
  if (payRequest.minSendable > payRequest.maxSendable || payRequest.maxSendable === 0) {
    throw new LnurlError('BAD_RESPONSE', `${address}: minSendable/maxSendable make no sense (${payRequest.minSendable} > ${payRequest.maxSendable})`, false);
  }
  if (amountMsat < payRequest.minSendable || amountMsat > payRequest.maxSendable) {
    throw new LnurlError('AMOUNT_OUT_OF_RANGE', `${address} accepts ${payRequest.minSendable}-${payRequest.maxSendable} msat, not ${amountMsat}`, false);
  }
  if (comment !== undefined && comment !== '') {
    const allowed = payRequest.commentAllowed ?? 0;
    if (comment.length > allowed) {
      throw new LnurlError(
        'COMMENT_NOT_ALLOWED',
        allowed === 0 ? `${address} takes no comment` : `${address} takes comments of at most ${allowed} characters`,
        false,
      );
    }
  }

  const callback = new URL(payRequest.callback);
  callback.searchParams.set('amount', String(amountMsat));
  if (comment) callback.searchParams.set('comment', comment);
  const answer = parseAnswer(await get(callback.href, options), CallbackAnswer, 'invoice');

  const decoded = checkInvoice(answer.pr, { address, amountMsat, network, metadata: payRequest.metadata, minExpirySeconds });
  const verifyUrl = answer.verify && /^https?:\/\//i.test(answer.verify) && URL.canParse(answer.verify) ? answer.verify : undefined;
  return { invoice: answer.pr, decoded, paymentHash: decoded.paymentHash, amountMsat, ...(verifyUrl ? { verifyUrl } : {}) };
}

/** The LUD-16 well-known URL of an address; http only for loopback hosts when they are allowed. */
export function lightningAddressUrl(address: string, allowLoopback: boolean): string {
  const parsed = lightningAddressSchema({ allowLoopback }).safeParse(address);
  if (!parsed.success)
    throw new LnurlError('ADDRESS_INVALID', `Not a Lightning Address${allowLoopback ? '' : ' on a public host'}: ${String(address).slice(0, 100)}`, false);
  const { username, host, loopback } = splitLightningAddress(parsed.data);
  try {
    return new URL(`${loopback ? 'http' : 'https'}://${host}/.well-known/lnurlp/${encodeURIComponent(username)}`).href;
  } catch {
    throw new LnurlError('ADDRESS_INVALID', `Not a Lightning Address: ${parsed.data}`, false);
  }
}

function checkInvoice(
  pr: string,
  expected: { address: string; amountMsat: number; network: Network; metadata: string; minExpirySeconds: number },
): DecodedInvoice {
  let decoded: DecodedInvoice;
  try {
    decoded = decodeInvoice(pr.trim().replace(/^lightning:/i, ''));
  } catch (error) {
    if (error instanceof InvalidInvoice)
      throw new LnurlError('INVALID_INVOICE', `${expected.address} answered an invalid invoice: ${error.reason}`, false, { cause: error });
    throw error;
  }
  const who = expected.address;
  if (decoded.network !== expected.network)
    throw new LnurlError('WRONG_NETWORK', `${who} answered an invoice for ${decoded.network}, we pay on ${expected.network}`, false);
  if (decoded.amountMsat !== expected.amountMsat) {
    throw new LnurlError(
      'INVOICE_AMOUNT_MISMATCH',
      `${who} answered an invoice for ${decoded.amountMsat ?? 'any amount'} msat, we asked for ${expected.amountMsat}`,
      false,
    );
  }
  if (decoded.descriptionHash !== bytesToHex(sha256(utf8ToBytes(expected.metadata)))) {
    throw new LnurlError('DESCRIPTION_HASH_MISMATCH', `${who} answered an invoice whose description hash is not SHA256 of its metadata`, false);
  }
  const secondsLeft = decoded.expiresAt - Math.floor(Date.now() / 1000);
  if (secondsLeft < expected.minExpirySeconds) {
    throw new LnurlError(
      'INVOICE_EXPIRED',
      `${who} answered an invoice that expires in ${secondsLeft} s (at least ${expected.minExpirySeconds} s needed)`,
      false,
    );
  }
  return decoded;
}

async function get(url: string, options: FetchInvoiceOptions): Promise<{ status: number; json: unknown; host: string }> {
  let response;
  try {
    response = await guardedGet(url, options.policy, options.resolve ? { resolve: options.resolve } : {});
  } catch (error) {
    if (error instanceof OutboundError) throw new LnurlError(error.code, error.message, error.retryable, { cause: error });
    throw error;
  }
  return { status: response.status, json: safeJson(response.body), host: new URL(response.url).host };
}

/** A 2xx answer of the expected shape, or LnurlError: the remote's ERROR status, a 5xx (retryable), or nonsense. */
function parseAnswer<S extends z.ZodType>(answer: { status: number; json: unknown; host: string }, schema: S, what: string): z.infer<S> {
  const { status, json, host } = answer;
  const remote = RemoteError.safeParse(json);
  if (status >= 500)
    throw new LnurlError('REMOTE_ERROR', `${host} answered ${status}${remote.success && remote.data.reason ? `: ${clip(remote.data.reason)}` : ''}`, true);
  if (remote.success) throw new LnurlError('REMOTE_ERROR', `${host} refused: ${clip(remote.data.reason ?? 'no reason given')}`, false);
  if (status < 200 || status > 299) throw new LnurlError('REMOTE_ERROR', `${host} answered ${status} to the ${what} request`, status === 429);
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new LnurlError(
      'BAD_RESPONSE',
      `${host} did not answer a LUD-06 ${what}: ${parsed.error.issues[0]?.path.join('.') || ''} ${parsed.error.issues[0]?.message ?? ''}`.trim(),
      false,
    );
  return parsed.data;
}

// A remote reason ends up in logs and error messages: keep it short and printable.
function clip(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** LUD-01: bech32 (hrp `lnurl`, no length limit), upper case as in QR codes. */
export function encodeLnurl(url: string): string {
  return bech32.encode('lnurl', bech32.toWords(utf8ToBytes(url)), false).toUpperCase();
}

/** LUD-01 back to the URL; accepts either case and a `lightning:` prefix. */
export function decodeLnurl(lnurl: string): string {
  const text = lnurl.trim().replace(/^lightning:/i, '');
  let decoded;
  try {
    decoded = bech32.decode(text as `${string}1${string}`, false);
  } catch (error) {
    throw new LnurlError('INVALID_LNURL', `Not an LNURL: ${(error as Error).message}`, false, { cause: error });
  }
  if (decoded.prefix !== 'lnurl') throw new LnurlError('INVALID_LNURL', `Not an LNURL (prefix ${decoded.prefix})`, false);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bech32.fromWords(decoded.words));
  } catch (error) {
    throw new LnurlError('INVALID_LNURL', 'Not an LNURL: the data is not a UTF-8 URL', false, { cause: error });
  }
}

/** The outbound policy for this deployment: loopback and http only outside production. */
export function outboundPolicy(config: Config): OutboundPolicy {
  return { allowLoopback: !config.production, timeoutMs: config.outbound.timeoutMs, maxBytes: config.outbound.maxBytes };
}
