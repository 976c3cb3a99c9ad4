// Our verification side by side with what a user would compare it with, on one
// core, each checking a paid credential (token + preimage) the way its users do:
//
// - ours: verifyToken of our macaroon (docs/l402-token.md: the HMAC chain
//   over identifier and caveats, expiry, SHA256(preimage) == hash) then
//   checkCaveats (route and price), the demo's caveats;
// - ours, format 1: the same for the legacy JSON token, which the macaroon
//   replaced and which is still read, by a small reader that is not tuned for
//   speed (JSON.parse, @noble/hashes), until it expires;
// - js-macaroon on our macaroon: the same tokens imported and verified by
//   js-macaroon with their root keys (derived before timing) and the same
//   checks, what a macaroon library costs on our tokens;
// - `macaroon` (js-macaroon, the library Aperture's JavaScript clients use):
//   import the base64 macaroon, verify it with a first-party caveat checker
//   (services, capabilities, valid_until), then SHA256(preimage) against the
//   payment hash in its identifier (Aperture's layout: version, hash, token id);
// - Alby's @getalby/lightning-tools: verifyL402Macaroon (HMAC over a base64url
//   JSON payload) then validatePreimage;
// - the unsigned {hash, exp} token the product specification describes: decode,
//   check exp, SHA256(preimage) == hash. The insecure floor: anyone can make one.
//
// Every side runs on the same number of distinct credentials, warmed up,
// median of five runs by this process's CPU time; each checks that every
// answer is "valid".
import { createHash } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { issueL402Macaroon, validatePreimage, verifyL402Macaroon } from '@getalby/lightning-tools';
import macaroon from 'macaroon';
import { Keyring, checkCaveats, mintToken, verifyToken } from 'l402-paywall';

const N = 256;
const ROUTE = '/api/demo/btc-price';

export interface PeerResult {
  name: string;
  what: string;
  perSecond: number;
}

/**
 * Operations per CPU second of this process, median of five runs after a
 * warm-up: on a shared machine the wall clock measures the share of a core we
 * got, and the peers are compared with each other by their ratios.
 */
async function opsPerSecond(fn: (i: number) => boolean | Promise<boolean>, iterations: number): Promise<number> {
  // A synchronous verifier is timed without an await per call: a turn of the
  // microtask queue costs more than some of the verifications measured.
  const first = fn(0);
  const loop =
    first instanceof Promise
      ? async (n: number) => {
          for (let i = 0; i < n; i++) if (!(await fn(i))) throw new Error('a valid credential was refused');
        }
      : (n: number) => {
          for (let i = 0; i < n; i++) if (!fn(i)) throw new Error('a valid credential was refused');
        };
  if (!(await first)) throw new Error('a valid credential was refused');
  await loop(Math.min(20_000, iterations));
  const rates: number[] = [];
  for (let run = 0; run < 5; run++) {
    const start = process.cpuUsage();
    await loop(iterations);
    const used = process.cpuUsage(start);
    rates.push(iterations / ((used.user + used.system) / 1e6));
  }
  return rates.sort((a, b) => a - b)[2]!;
}

function credentials(): { preimage: string; hash: string }[] {
  return Array.from({ length: N }, () => {
    const preimage = randomBytes(32);
    return { preimage: bytesToHex(preimage), hash: bytesToHex(sha256(preimage)) };
  });
}

/** verifyToken + checkCaveats (the demo's route and price) of each token with its preimage, per second. */
function verifiedPerSecond(keyring: Keyring, tokens: readonly { token: string; preimage: string }[]): Promise<number> {
  const expect = { route: ROUTE, priceMsat: 1000 };
  return opsPerSecond((i) => {
    const t = tokens[i & (N - 1)]!;
    const r = verifyToken(keyring, t.token, t.preimage);
    return r.ok && checkCaveats(r.token.caveats, expect).ok;
  }, 400_000);
}

async function ours(): Promise<number> {
  const keyring = new Keyring(['bench-peers-secret-'.padEnd(64, 'x')]);
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const tokens = credentials().map((c) => ({
    token: mintToken(keyring, { paymentHash: c.hash, expiresAt: exp, caveats: { route: ROUTE, price_msat: 1000 } }),
    preimage: c.preimage,
  }));
  return verifiedPerSecond(keyring, tokens);
}

/** Tokens of format 1 (base64url JSON, before the macaroon), made from the keyring's signature as those releases made them. */
async function oursLegacy(): Promise<number> {
  const keyring = new Keyring(['bench-peers-secret-'.padEnd(64, 'x')]);
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const caveats = ['price_msat=1000', `route=${ROUTE}`];
  const tokens = credentials().map((c) => {
    const payload = { v: 1, kid: keyring.signingKid, hash: c.hash, exp, caveats, sig: keyring.sign(c.hash, exp, caveats) };
    return { token: Buffer.from(JSON.stringify(payload)).toString('base64url'), preimage: c.preimage };
  });
  return verifiedPerSecond(keyring, tokens);
}

/**
 * js-macaroon's own verification per second: import each base64 macaroon,
 * verify it with its root key and `check` as the first-party caveat checker
 * (verify throws on any failure), then SHA256(preimage) against the payment
 * hash in its identifier (Aperture's layout: version, hash, token id).
 */
function jsMacaroonPerSecond(
  tokens: readonly { token: string; rootKey: Uint8Array; preimage: string }[],
  check: (condition: string) => string | null,
): Promise<number> {
  return opsPerSecond((i) => {
    const t = tokens[i & (N - 1)]!;
    const m = macaroon.importMacaroon(t.token);
    m.verify(t.rootKey, check);
    const hash = Buffer.from(m.identifier.subarray(2, 34)).toString('hex');
    return createHash('sha256').update(Buffer.from(t.preimage, 'hex')).digest('hex') === hash;
  }, 30_000);
}

/** js-macaroon verifying our macaroons (the demo's caveats) with their root keys, our checks as its caveat checker. */
async function jsMacaroonOnOurs(): Promise<number> {
  const keyring = new Keyring(['bench-peers-secret-'.padEnd(64, 'x')]);
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const tokens = credentials().map((c) => {
    const token = mintToken(keyring, { paymentHash: c.hash, expiresAt: exp, caveats: { route: ROUTE, price_msat: 1000 } });
    const rootKey = keyring.macaroonRootKey(macaroon.importMacaroon(token).identifier.subarray(34))!;
    return { token, rootKey, preimage: c.preimage };
  });
  const now = Math.floor(Date.now() / 1000);
  const check = (condition: string): string | null => {
    if (condition === `route=${ROUTE}`) return null;
    if (condition.startsWith('price_msat=')) return Number(condition.slice(11)) >= 1000 ? null : 'price';
    if (condition.startsWith('expires_at=')) return Number(condition.slice(11)) > now ? null : 'expired';
    return 'unknown caveat';
  };
  return jsMacaroonPerSecond(tokens, check);
}

async function jsMacaroon(): Promise<number> {
  const rootKey = randomBytes(32);
  const validUntil = Math.floor(Date.now() / 1000) + 3600;
  const tokens = credentials().map((c) => {
    // Aperture's identifier: uint16 version 0, payment hash, 32-byte token id.
    const identifier = new Uint8Array(66);
    identifier.set(Buffer.from(c.hash, 'hex'), 2);
    identifier.set(randomBytes(32), 34);
    const m = macaroon.newMacaroon({ identifier, rootKey, location: 'bench', version: 2 });
    m.addFirstPartyCaveat('services=btc-price:0');
    m.addFirstPartyCaveat('btc-price_capabilities=read');
    m.addFirstPartyCaveat(`btc-price_valid_until=${validUntil}`);
    return { token: macaroon.bytesToBase64(m.exportBinary()), rootKey, preimage: c.preimage };
  });
  const now = Math.floor(Date.now() / 1000);
  const check = (condition: string): string | null => {
    const eq = condition.indexOf('=');
    const key = condition.slice(0, eq);
    const value = condition.slice(eq + 1);
    if (key === 'services') return value.split(',').some((s) => s.split(':')[0] === 'btc-price') ? null : 'service not allowed';
    if (key === 'btc-price_capabilities') return value.split(',').includes('read') ? null : 'capability not allowed';
    if (key === 'btc-price_valid_until') return Number(value) > now ? null : 'expired';
    return 'unknown caveat';
  };
  return jsMacaroonPerSecond(tokens, check);
}

async function alby(): Promise<number> {
  const secret = bytesToHex(randomBytes(32));
  const tokens = await Promise.all(
    credentials().map(async (c) => ({ token: await issueL402Macaroon(secret, c.hash, { route: ROUTE, priceSats: 1 }), preimage: c.preimage })),
  );
  return opsPerSecond(async (i) => {
    const t = tokens[i & (N - 1)]!;
    const payload = await verifyL402Macaroon<{ route: string }>(secret, t.token);
    return payload.route === ROUTE && validatePreimage(t.preimage, payload.paymentHash);
  }, 100_000);
}

async function unsignedFloor(): Promise<number> {
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const tokens = credentials().map((c) => ({ token: Buffer.from(JSON.stringify({ hash: c.hash, exp })).toString('base64url'), preimage: c.preimage }));
  return opsPerSecond((i) => {
    const t = tokens[i & (N - 1)]!;
    const { hash, exp: expiresAt } = JSON.parse(Buffer.from(t.token, 'base64url').toString('utf8')) as { hash: string; exp: number };
    return expiresAt > Date.now() / 1000 && createHash('sha256').update(Buffer.from(t.preimage, 'hex')).digest('hex') === hash;
  }, 400_000);
}

const PEERS: { name: string; what: string; measure: () => Promise<number> }[] = [
  { name: 'ours', what: 'verifyToken + checkCaveats of our macaroon (HMAC chain, bound to route, price, expiry)', measure: ours },
  { name: 'ours, format 1 (JSON)', what: 'the same for the legacy JSON token, read until it expires', measure: oursLegacy },
  { name: 'js-macaroon on ours', what: 'importMacaroon + verify(root key) of our macaroon, same checks + preimage', measure: jsMacaroonOnOurs },
  { name: 'macaroon (js-macaroon)', what: 'importMacaroon + verify with caveat checker + preimage, as Aperture clients', measure: jsMacaroon },
  { name: 'Alby lightning-tools', what: 'verifyL402Macaroon + validatePreimage', measure: alby },
  { name: 'unsigned {hash, exp}', what: 'decode, exp, SHA256(preimage) == hash: forgeable, the floor', measure: unsignedFloor },
];

/** Each peer's rate per CPU second; `only`: the peers named (all when empty). */
export async function benchPeers(only: readonly string[] = []): Promise<PeerResult[]> {
  const results: PeerResult[] = [];
  for (const { name, what, measure } of PEERS) if (only.length === 0 || only.includes(name)) results.push({ name, what, perSecond: await measure() });
  return results;
}

// `npx tsx bench/peers.ts [peer name...]` runs it alone (the peers named, or all).
if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchPeers(process.argv.slice(2)));
