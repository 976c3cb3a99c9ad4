// Managed mode for library users (docs/managed-mode.md): no
// Lightning node, only a Lightning Address. The hosted service issues the
// invoice (POST {serviceUrl}/api/invoice with the owner's address) and pays the
// owner 99.7% once it is paid; this side trusts nothing it gets back: the
// answer is validated, the BOLT11 invoice decoded (signature checked) and its
// amount and payment hash compared with what was asked before the paywall mints
// its own token with its own secret. Paid requests are verified locally, exactly
// as in sovereign mode. The token carries an `owner` caveat (docs/architecture.md decision 2).
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, randomBytes } from '@noble/hashes/utils.js';
import { z } from 'zod';
import { discardBody } from '../http/discard-body.js';
import { readBoundedText } from '../http/read-bounded.js';
import { base64UrlEncode } from '../crypto/encoding.js';
import { Keyring } from '../schemes/l402/token.js';
import { paywallFetchHandler } from '../adapters/fetch.js';
import { logError, secretIsMissing, settingIsMissing, type L402Options, type MissingSetting } from '../paywall/options.js';
import type { InvoiceProvider } from '../core/invoices.js';
import { decodeInvoice, type Network } from '../lightning/bolt11.js';
import { LightningAddressWithLoopback as LightningAddress } from '../lightning/address.js';
import { loadServerAudit } from '../events/load-builder.js';

export interface ManagedMode {
  /** Where the owner is paid: a Lightning Address like name@example.com (the service decides whether it takes loopback ones). */
  lightningAddress: string;
  /** The hosted service, e.g. https://l402.example.com. */
  serviceUrl: string | URL;
  /** When set, invoices for another network are refused. */
  network?: Network;
  /** Per call to the service; default 10000 ms. */
  timeoutMs?: number;
  /** Default globalThis.fetch. */
  fetch?: typeof fetch;
}

/** The public directory entry POST /api/register makes once the first request is served, proving the url is the owner's. */
export interface DirectoryRegistration {
  name: string;
  description?: string;
  category?: 'data' | 'ai' | 'finance' | 'weather' | 'compute' | 'storage' | 'other';
  /**
   * The endpoint's public URL, as clients reach it (https://api.example.com/v1/price). Required:
   * a request's own URL is built from its Host header, which the client chooses, so it is never used.
   */
  url: string;
  /** Needed when priceSats is a function. */
  priceSats?: number;
}

export type ManagedL402Options = Omit<L402Options, 'provider'> & {
  provider?: undefined;
  managed: ManagedMode;
  register?: DirectoryRegistration;
};

/** The service answered something other than a valid invoice for what was asked; the paywall answers 503. */
export class ManagedServiceError extends Error {
  override readonly name = 'ManagedServiceError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const MAX_ANSWER_BYTES = 16 * 1024;
const REGISTER_RETRY_MS = 60_000;
const REGISTER_ATTEMPTS = 5;

const InvoiceAnswer = z.object({
  paymentRequest: z.string().min(1).max(4096),
  paymentHash: z.string().regex(/^[0-9a-fA-F]{64}$/),
  macaroon: z.string().max(8192).optional(),
});

function serviceEndpoint(serviceUrl: string | URL, path: string): string {
  return new URL(path, checkedServiceUrl(serviceUrl)).toString();
}

/** What a wrong option throws: which option, what it must be, and what it got (never a bare ZodError). */
function badOption(name: string, expected: string, value: unknown): TypeError {
  const got = value === undefined ? 'undefined' : typeof value === 'string' ? JSON.stringify(value) : typeof value === 'object' ? 'an object' : String(value);
  return new TypeError(`withL402: option \`${name}\` must be ${expected}, got ${got}`);
}

function checkedOwnerAddress(address: unknown): string {
  const parsed = LightningAddress.safeParse(address);
  if (!parsed.success) throw badOption('managed.lightningAddress', 'a Lightning Address like name@example.com (where you are paid)', address);
  return parsed.data;
}

function checkedServiceUrl(serviceUrl: unknown): URL {
  const expected = "the hosted service's http(s) URL, like https://l402.example.com";
  if (typeof serviceUrl !== 'string' && !(serviceUrl instanceof URL)) throw badOption('managed.serviceUrl', expected, serviceUrl);
  let base: URL;
  try {
    base = new URL(serviceUrl);
  } catch {
    throw badOption('managed.serviceUrl', expected, String(serviceUrl));
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw badOption('managed.serviceUrl', expected, String(serviceUrl));
  return base;
}

const NETWORKS: readonly Network[] = ['bitcoin', 'testnet', 'signet', 'regtest'];

/** Managed mode's settings that are not set (a build has no runtime settings), or a TypeError naming the one that is set but wrong. */
function missingManagedSettings(mode: unknown): MissingSetting[] {
  if (typeof mode !== 'object' || mode === null) throw badOption('managed', 'an object { lightningAddress, serviceUrl }', mode);
  const { lightningAddress, serviceUrl, network, timeoutMs, fetch } = mode as Partial<Record<keyof ManagedMode, unknown>>;
  const missing: MissingSetting[] = [];
  if (settingIsMissing(lightningAddress))
    missing.push({ option: 'managed.lightningAddress', hint: 'the Lightning Address you are paid at, like name@example.com' });
  else checkedOwnerAddress(lightningAddress);
  if (settingIsMissing(serviceUrl)) missing.push({ option: 'managed.serviceUrl', hint: "the hosted service's URL, like https://l402.example.com" });
  else checkedServiceUrl(serviceUrl);
  if (network !== undefined && !NETWORKS.includes(network as Network)) throw badOption('managed.network', `one of ${NETWORKS.join(', ')}`, network);
  if (timeoutMs !== undefined && !(Number.isSafeInteger(timeoutMs) && (timeoutMs as number) > 0))
    throw badOption('managed.timeoutMs', 'a positive whole number of milliseconds', timeoutMs);
  if (fetch !== undefined && typeof fetch !== 'function') throw badOption('managed.fetch', 'a function like fetch', fetch);
  return missing;
}

/** An InvoiceProvider backed by the hosted service: what the paywall calls in managed mode. */
export function managedInvoiceProvider(mode: ManagedMode, options: { endpoint?: string } = {}): InvoiceProvider {
  const ownerAddress = checkedOwnerAddress(mode.lightningAddress);
  const invoiceUrl = serviceEndpoint(mode.serviceUrl, '/api/invoice');
  const timeoutMs = mode.timeoutMs ?? 10_000;
  const doFetch = mode.fetch ?? ((input, init) => globalThis.fetch(input, init));

  return {
    async createInvoice({ amountMsat, memo }) {
      if (!Number.isSafeInteger(amountMsat) || amountMsat <= 0 || amountMsat % 1000 !== 0)
        throw new ManagedServiceError('managed mode sells whole satoshis only');
      const amountSats = amountMsat / 1000;
      let response: Response;
      try {
        response = await doFetch(invoiceUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({
            amountSats,
            ownerAddress,
            ...(memo ? { memo: memo.slice(0, 200) } : {}),
            ...(options.endpoint ? { endpoint: options.endpoint } : {}),
          }),
          signal: AbortSignal.timeout(timeoutMs),
          redirect: 'error',
        });
      } catch (error) {
        throw new ManagedServiceError(`the managed service could not be reached: ${error instanceof Error ? error.message : String(error)}`);
      }
      // The time limit covers the body too: a stream that stops is cut off by the same signal.
      const read = await readBoundedText(response.body, MAX_ANSWER_BYTES).catch(() => undefined);
      if (!response.ok) throw new ManagedServiceError(`the managed service answered ${response.status}`, response.status);
      if (!read) throw new ManagedServiceError(`the managed service did not finish its answer within ${timeoutMs} ms`);
      if (!read.ok && read.reason === 'too-large') throw new ManagedServiceError(`the managed service answered more than ${MAX_ANSWER_BYTES} bytes`);
      if (!read.ok) throw new ManagedServiceError('the managed service answered a body that is not UTF-8');
      const text = read.text;
      let parsed;
      try {
        parsed = InvoiceAnswer.safeParse(JSON.parse(text));
      } catch {
        throw new ManagedServiceError('the managed service answered something that is not JSON');
      }
      if (!parsed.success) throw new ManagedServiceError('the managed service answered without a valid invoice');
      const paymentHash = parsed.data.paymentHash.toLowerCase();
      let decoded;
      try {
        decoded = decodeInvoice(parsed.data.paymentRequest);
      } catch (error) {
        throw new ManagedServiceError(`the managed service answered an invalid invoice: ${error instanceof Error ? error.message : String(error)}`);
      }
      // The token is bound to this hash: a wrong one would sell access for another payment.
      if (decoded.paymentHash !== paymentHash) throw new ManagedServiceError('the invoice does not carry the payment hash the service named');
      if (decoded.amountMsat !== amountMsat)
        throw new ManagedServiceError(`the invoice is for ${decoded.amountMsat ?? 'any'} msat, not the ${amountMsat} msat asked`);
      if (decoded.expiresAt <= Math.floor(Date.now() / 1000)) throw new ManagedServiceError('the invoice has already expired');
      if (mode.network && decoded.network !== mode.network) throw new ManagedServiceError(`the invoice is for ${decoded.network}, not ${mode.network}`);
      return { invoice: parsed.data.paymentRequest, paymentHash };
    },
  };
}

/**
 * withL402 in either mode: `provider` (sovereign, 0% fee) or `managed:
 * {lightningAddress, serviceUrl}` (no node; the service keeps 0.3%).
 */
export function withL402<Rest extends unknown[]>(
  handler: (request: Request, ...rest: Rest) => Response | Promise<Response>,
  options: L402Options | ManagedL402Options,
): (request: Request, ...rest: Rest) => Promise<Response> {
  if (!options || !('managed' in options) || options.managed === undefined) return paywallFetchHandler(handler, options as L402Options, loadServerAudit);
  const { managed, register, ...rest } = options;
  if ((options as { provider?: unknown }).provider) throw new Error('withL402: pass either option `provider` (sovereign mode) or `managed`, not both');
  const missing = missingManagedSettings(managed);
  if (missing.length > 0) {
    // Like a missing secret: every request answers 503 NOT_CONFIGURED naming what to set; nothing is sold or registered.
    return paywallFetchHandler(handler, { ...rest, provider: UNCONFIGURED_SERVICE }, loadServerAudit, missing);
  }
  const ownerAddress = checkedOwnerAddress(managed.lightningAddress);
  // Without a secret the paywall answers 503 NOT_CONFIGURED (paywall.ts notConfigured): no proofs, no registration.
  const proofs = secretIsMissing(rest.secret) ? undefined : directoryProofs(rest.secret);
  const userCaveats = rest.caveats;
  const paywalled = paywallFetchHandler(
    handler,
    {
      ...rest,
      provider: managedInvoiceProvider(managed, typeof rest.route === 'string' ? { endpoint: rest.route } : {}),
      // The token names whom the payment was for, so it cannot open another owner's endpoint.
      caveats: async (request) => ({ ...(userCaveats ? await userCaveats(request) : {}), owner: ownerAddress }),
    },
    loadServerAudit,
  );
  // The directory asks this url to prove it belongs to this owner; only tokens this owner's instances made are answered.
  const answeringProofs = (request: Request, ...more: Rest): Promise<Response> => {
    const token = request.method === 'GET' ? request.headers.get(DIRECTORY_PROOF_HEADER) : null;
    if (token !== null && proofs?.isOurs(token)) {
      return Promise.resolve(
        new Response(`${token}.${ownerAddress}`, { headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' } }),
      );
    }
    return paywalled(request, ...more);
  };
  if (!register || !proofs) return answeringProofs;

  const report = rest.onError ?? logError;
  const entry = directoryEntry(register, typeof rest.priceSats === 'number' ? rest.priceSats : undefined);
  if (typeof entry === 'string') {
    // Said once, now, rather than guessed later from a request; the paywall itself works without it.
    report(new Error(entry), 'directory registration is off');
    return answeringProofs;
  }
  const registration = directoryRegistration(managed, ownerAddress, entry, report, proofs);
  // Started by the first request, not here: the directory asks the url for its proof, which
  // only a server already listening can answer.
  return (request, ...more) => {
    registration.start();
    return answeringProofs(request, ...more);
  };
}

/** The provider while managed mode's settings are missing: the paywall refuses every request before it would ask (buildPaywall's notConfigured). */
const UNCONFIGURED_SERVICE: InvoiceProvider = {
  createInvoice: () => Promise.reject(new ManagedServiceError('managed mode is not configured')),
};

/** What POST /api/register is sent, from the operator's configuration alone. */
interface RegisteredEntry extends Omit<DirectoryRegistration, 'url' | 'priceSats'> {
  url: string;
  priceSats: number;
}

/**
 * The entry to register, or what is missing (a string). A url that is there but
 * wrong throws at once, like any other wrong option; a missing one is only
 * reported, so that building an app whose settings arrive at run time does not fail.
 */
function directoryEntry(register: DirectoryRegistration, fixedPrice: number | undefined): RegisteredEntry | string {
  const { url, priceSats = fixedPrice, ...described } = register;
  if (!url)
    return "register.url is missing: set it to the endpoint's public URL (e.g. https://api.example.com/v1/price); a request's own URL is never registered, its Host header is the client's choice";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`register.url must be an absolute http(s) URL, not ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new Error(`register.url must be an http(s) URL, not ${parsed.protocol}`);
  if (priceSats === undefined) return 'register.priceSats is missing: it is needed when priceSats is a function';
  parsed.search = '';
  parsed.hash = '';
  return { ...described, url: parsed.toString(), priceSats };
}

/** Asked by the directory (POST /api/register) of the registered url itself. */
export const DIRECTORY_PROOF_HEADER = 'l402-directory-proof';
const PROOF_MAX_AGE_SECONDS = 15 * 60;

/**
 * Proof tokens for the directory: 4 bytes of issue time, 12 random bytes and a
 * 16-byte MAC under the paywall's secret, so every instance sharing the secret
 * recognises the tokens any of them made (serverless: the directory's check may
 * reach another instance than the one registering), and nobody else can make
 * this url vouch for a registration it did not start.
 */
function directoryProofs(secret: NonNullable<L402Options['secret']>): { make(): string; isOurs(token: string): boolean } {
  const keyring = secret instanceof Keyring ? secret : new Keyring(typeof secret === 'string' ? [secret] : secret);
  // The keyring's HMAC over a label no token carries, with exp 0: what it makes can never open a route.
  const mac = (body: Uint8Array) => hexToBytes(keyring.sign(bytesToHex(sha256(body)), 0, ['purpose=directory-proof'])).subarray(0, 16);
  return {
    make() {
      const body = new Uint8Array(16);
      new DataView(body.buffer).setUint32(0, Math.floor(Date.now() / 1000));
      body.set(randomBytes(12), 4);
      const token = new Uint8Array(32);
      token.set(body);
      token.set(mac(body), 16);
      return base64UrlEncode(token);
    },
    isOurs(token) {
      if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return false;
      const bytes = base64UrlDecode(token);
      const body = bytes.subarray(0, 16);
      const age = Math.floor(Date.now() / 1000) - new DataView(body.buffer, body.byteOffset).getUint32(0);
      if (age < -60 || age > PROOF_MAX_AGE_SECONDS) return false;
      const expected = mac(body);
      let difference = 0;
      for (let i = 0; i < 16; i++) difference |= expected[i]! ^ bytes[16 + i]!;
      return difference === 0;
    },
  };
}

function base64UrlDecode(text: string): Uint8Array {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/** POST /api/register in the background: once per process, retried a few times, never in a request's way. */
function directoryRegistration(
  managed: ManagedMode,
  ownerAddress: string,
  entry: RegisteredEntry,
  report: (error: unknown, context: string) => void,
  proofs: { make(): string },
): { start(): void } {
  let state: 'idle' | 'running' | 'done' = 'idle';
  let attempts = 0;
  let nextTry = 0;
  const doFetch = managed.fetch ?? ((input, init) => globalThis.fetch(input, init));

  async function send(): Promise<void> {
    const response = await doFetch(serviceEndpoint(managed.serviceUrl, '/api/register'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        url: entry.url,
        name: entry.name,
        price_sats: entry.priceSats,
        lightning_address: ownerAddress,
        // The directory checks it against this url (answered by the wrapper above): proof that the url is the owner's.
        proof_token: proofs.make(),
        ...(entry.description !== undefined ? { description: entry.description } : {}),
        ...(entry.category !== undefined ? { category: entry.category } : {}),
      }),
      signal: AbortSignal.timeout(managed.timeoutMs ?? 10_000),
      redirect: 'error',
    });
    discardBody(response.body);
    if (!response.ok) throw new ManagedServiceError(`directory registration answered ${response.status}`, response.status);
  }

  return {
    start() {
      if (state !== 'idle' || Date.now() < nextTry || attempts >= REGISTER_ATTEMPTS) return;
      state = 'running';
      attempts += 1;
      send().then(
        () => {
          state = 'done';
        },
        (error) => {
          state = 'idle';
          // Refused for a reason a retry will not change (invalid entry): stop. 403 is retried: the
          // directory may have checked the url before this server was reachable there.
          if (error instanceof ManagedServiceError && error.status !== undefined && error.status < 500 && error.status !== 429 && error.status !== 403)
            attempts = REGISTER_ATTEMPTS;
          nextTry = Date.now() + REGISTER_RETRY_MS;
          report(error, `registering in the directory failed (attempt ${attempts} of ${REGISTER_ATTEMPTS})`);
        },
      );
    },
  };
}
