// Paying Lightning Addresses (fetchInvoiceForAddress against an owner server
// that can lie) and serving our own (GET /.well-known/lnurlp/:username through
// the real local server).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { LightningAddress as AlbyLightningAddress, parseLnUrlPayResponse } from '@getalby/lightning-tools';
import { decode as lightDecode } from 'light-bolt11-decoder';
import { createDevNode } from 'l402-paywall/backends';
import { fetchInvoiceForAddress, LnurlError, type OutboundPolicy } from '../../lib/lightning/lnurl.js';
import { createMemoryStore } from '../../lib/store/index.js';
import { startOwnerServer, recordOutgoingSockets, type OwnerBehaviour, type OwnerServer, type OwnerSettings } from '../support/owner-server.js';
import { useDevServer } from '../support/server.js';
import { rejection } from '../../packages/l402-paywall/tests/support/l402.js';

const DEV: OutboundPolicy = { allowLoopback: true, timeoutMs: 2000, maxBytes: 16 * 1024 };
const PRODUCTION: OutboundPolicy = { ...DEV, allowLoopback: false };
const hex = (text: string) => bytesToHex(sha256(utf8ToBytes(text)));

const lnurlFailure = (run: () => Promise<unknown>) => rejection(run(), LnurlError);

describe('fetchInvoiceForAddress', () => {
  const store = createMemoryStore();
  let owner: OwnerServer;
  beforeAll(async () => {
    owner = await startOwnerServer({ store });
  });
  afterAll(() => owner.close());

  function behave(behaviour: OwnerBehaviour, settings: Partial<OwnerSettings> = {}) {
    owner.setBehaviour(behaviour, settings);
    owner.requests.length = 0;
  }

  it('honest owner: returns the checked invoice, sends the comment, and a dev node on the same store can pay it', async () => {
    behave('honest', { commentAllowed: 32 });
    const got = await fetchInvoiceForAddress(owner.address('alice'), 21_000, { policy: DEV, network: 'regtest', comment: 'payout 7' });
    expect(got.amountMsat).toBe(21_000);
    expect(got.decoded).toMatchObject({
      amountMsat: 21_000,
      network: 'regtest',
      descriptionHash: hex(owner.metadata('alice')),
      payeeNodeKey: owner.node.nodeKey,
    });
    expect(got.paymentHash).toBe(got.decoded.paymentHash);
    expect(owner.requests.map((r) => r.stage)).toEqual(['lnurlp', 'callback']);
    expect(owner.requests[1]).toMatchObject({ username: 'alice', amountMsat: 21_000, comment: 'payout 7' });

    // Independent decoder agrees on what we are about to pay.
    const sections = Object.fromEntries(lightDecode(got.invoice).sections.map((s) => [s.name, 'value' in s ? s.value : undefined]));
    expect(sections.amount).toBe('21000');
    expect(sections.description_hash).toBe(hex(owner.metadata('alice')));

    const service = createDevNode({ store, privateKey: '22'.repeat(32) });
    await service.pay(got.invoice);
    expect(await owner.node.balance()).toEqual({ balanceMsat: 21_000 });
  });

  const refusals: Array<[string, OwnerBehaviour, Partial<OwnerSettings>, string, boolean, Array<OwnerServerStage>]> = [
    ['an invoice for more than asked', 'invoice-more-than-asked', {}, 'INVOICE_AMOUNT_MISMATCH', false, ['lnurlp', 'callback']],
    ['a wrong description hash', 'wrong-description-hash', {}, 'DESCRIPTION_HASH_MISMATCH', false, ['lnurlp', 'callback']],
    ['an expired invoice', 'expired-invoice', {}, 'INVOICE_EXPIRED', false, ['lnurlp', 'callback']],
    ['a mainnet invoice', 'wrong-network', {}, 'WRONG_NETWORK', false, ['lnurlp', 'callback']],
    ['a redirect to 10.0.0.1', 'redirect', { redirectTo: 'http://10.0.0.1/' }, 'HOST_REFUSED', false, ['lnurlp']],
    ['a redirect to the metadata service', 'redirect', { redirectTo: 'https://169.254.169.254/latest/meta-data/' }, 'HOST_REFUSED', false, ['lnurlp']],
    ['a redirect to mapped IPv6 metadata', 'redirect', { redirectTo: 'https://[::ffff:169.254.169.254]/' }, 'HOST_REFUSED', false, ['lnurlp']],
    ['a callback at the metadata service', 'private-callback', {}, 'HOST_REFUSED', false, ['lnurlp']],
    [
      'a callback redirecting to a private address',
      'redirect',
      { stage: 'callback', redirectTo: 'https://192.168.1.1/' },
      'HOST_REFUSED',
      false,
      ['lnurlp', 'callback'],
    ],
    ['no answer (slow)', 'slow', {}, 'TIMEOUT', true, ['lnurlp']],
    ['an endless body', 'huge', {}, 'RESPONSE_TOO_LARGE', false, ['lnurlp']],
    ['a LUD-06 ERROR status', 'error-status', {}, 'REMOTE_ERROR', false, ['lnurlp', 'callback']],
    ['a 500', 'server-error', {}, 'REMOTE_ERROR', true, ['lnurlp']],
  ];

  it.each(refusals)('refuses %s', async (_what, behaviour, settings, code, retryable, stages) => {
    behave(behaviour, settings);
    const sockets = recordOutgoingSockets();
    let error: LnurlError;
    try {
      error = await lnurlFailure(() => fetchInvoiceForAddress(owner.address('bob'), 5000, { policy: { ...DEV, timeoutMs: 500 }, network: 'regtest' }));
    } finally {
      sockets.stop();
    }
    expect(error).toMatchObject({ code, retryable });
    expect(owner.requests.map((r) => r.stage)).toEqual(stages);
    // Every connection went to the owner server, one per request it saw: nothing reached a private address.
    expect(sockets.opened).toBe(stages.length);
    expect(sockets.connectedTo.every((a) => a === '127.0.0.1')).toBe(true);
  });

  it('refuses amounts outside min/maxSendable and comments the owner does not take, before asking for an invoice', async () => {
    behave('honest', { minSendable: 10_000, maxSendable: 20_000, commentAllowed: 0 });
    for (const amount of [9_999, 20_001]) {
      expect(await lnurlFailure(() => fetchInvoiceForAddress(owner.address('carol'), amount, { policy: DEV, network: 'regtest' }))).toMatchObject({
        code: 'AMOUNT_OUT_OF_RANGE',
        retryable: false,
      });
    }
    expect(await lnurlFailure(() => fetchInvoiceForAddress(owner.address('carol'), 15_000, { policy: DEV, network: 'regtest', comment: 'hi' }))).toMatchObject({
      code: 'COMMENT_NOT_ALLOWED',
    });
    behave('honest', { commentAllowed: 5 });
    expect(
      await lnurlFailure(() => fetchInvoiceForAddress(owner.address('carol'), 15_000, { policy: DEV, network: 'regtest', comment: 'sixsix' })),
    ).toMatchObject({ code: 'COMMENT_NOT_ALLOWED' });
    expect(owner.requests.every((r) => r.stage === 'lnurlp')).toBe(true);
    await expect(fetchInvoiceForAddress(owner.address('carol'), 15_000, { policy: DEV, network: 'regtest', comment: 'five!' })).resolves.toMatchObject({
      amountMsat: 15_000,
    });
  });

  it('asks for an invoice that stays payable long enough', async () => {
    behave('honest');
    // The dev node's invoices last an hour: asking for two hours of margin refuses them.
    expect(
      await lnurlFailure(() => fetchInvoiceForAddress(owner.address('dave'), 1000, { policy: DEV, network: 'regtest', minExpirySeconds: 7200 })),
    ).toMatchObject({ code: 'INVOICE_EXPIRED' });
  });

  it('production policy refuses loopback addresses and never connects', async () => {
    behave('honest');
    const sockets = recordOutgoingSockets();
    try {
      for (const address of [owner.address('erin'), `erin@localhost:${owner.port}`, `erin@[::1]:${owner.port}`]) {
        expect(await lnurlFailure(() => fetchInvoiceForAddress(address, 1000, { policy: PRODUCTION, network: 'regtest' })), address).toMatchObject({
          code: 'ADDRESS_INVALID',
          retryable: false,
        });
      }
      // A public-looking name that resolves to loopback is refused after resolution.
      const error = await lnurlFailure(() =>
        fetchInvoiceForAddress('erin@owner.example.com', 1000, {
          policy: PRODUCTION,
          network: 'regtest',
          resolve: async () => [{ address: '127.0.0.1', family: 4 }],
        }),
      );
      expect(error).toMatchObject({ code: 'HOST_REFUSED', retryable: false });
    } finally {
      sockets.stop();
    }
    expect(sockets.opened).toBe(0);
    expect(owner.requests).toHaveLength(0);
  });

  it('an unreachable owner is retryable; nonsense answers are not', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    await new Promise((done) => closed.close(done));
    expect(await lnurlFailure(() => fetchInvoiceForAddress(`frank@127.0.0.1:${port}`, 1000, { policy: DEV, network: 'regtest' }))).toMatchObject({
      code: 'UNREACHABLE',
      retryable: true,
    });
    behave('honest');
    expect(await lnurlFailure(() => fetchInvoiceForAddress('not an address', 1000, { policy: DEV, network: 'regtest' }))).toMatchObject({
      code: 'ADDRESS_INVALID',
    });
  });
});

type OwnerServerStage = 'lnurlp' | 'callback';

describe('GET /.well-known/lnurlp/:username (the service, through the local server)', () => {
  const server = useDevServer(() => ({ LNURLP_USERNAMES: 'alice,fees' }));
  const host = () => new URL(server.url).host;

  it('answers a LUD-06 payRequest whose metadata names the address', async () => {
    const response = await fetch(`${server.url}/.well-known/lnurlp/alice`);
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      tag: 'payRequest',
      callback: `${server.url}/api/lnurlp/alice`,
      minSendable: 1000,
      maxSendable: 1_000_000_000,
      commentAllowed: 140,
    });
    expect(JSON.parse(body.metadata as string)).toEqual([
      ['text/plain', `Payment to alice@${host()}`],
      ['text/identifier', `alice@${host()}`],
    ]);
  });

  it('the callback issues an invoice whose h is SHA256(metadata), as a third-party client reads it', async () => {
    const payRequest = (await (await fetch(`${server.url}/.well-known/lnurlp/alice`)).json()) as { metadata: string; callback: string };
    // @getalby/lightning-tools builds only https URLs from an address, so give it our parsed answer and let it call the callback.
    const alby = new AlbyLightningAddress('alice@example.com', { proxy: false });
    alby.lnurlpData = await parseLnUrlPayResponse(payRequest as unknown as Parameters<typeof parseLnUrlPayResponse>[0]);
    expect(alby.lnurlpData).toMatchObject({
      min: 1000,
      max: 1_000_000_000,
      identifier: `alice@${host()}`,
      commentAllowed: 140,
      metadataHash: hex(payRequest.metadata),
    });
    const invoice = await alby.requestInvoice({ satoshi: 21, comment: 'thanks' });
    expect(invoice.satoshi).toBe(21);

    const sections = Object.fromEntries(lightDecode(invoice.paymentRequest).sections.map((s) => [s.name, 'value' in s ? s.value : undefined]));
    expect(sections.description_hash).toBe(alby.lnurlpData!.metadataHash);
    expect(sections.amount).toBe('21000');

    const direct = (await (await fetch(`${payRequest.callback}?amount=5000`)).json()) as { pr: string; routes: unknown[] };
    expect(direct.routes).toEqual([]);
    expect(Object.fromEntries(lightDecode(direct.pr).sections.map((s) => [s.name, 'value' in s ? s.value : undefined])).description_hash).toBe(
      hex(payRequest.metadata),
    );
  });

  it('our own payer accepts our own address, and the dev wallet pays the invoice', async () => {
    const got = await fetchInvoiceForAddress(`fees@${host()}`, 12_000, { policy: DEV, network: 'regtest', comment: 'fee share' });
    expect(got.amountMsat).toBe(12_000);
    const paid = await fetch(`${server.url}/api/dev/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoice: got.invoice }),
    });
    expect(paid.status).toBe(200);
    expect(await paid.json()).toMatchObject({ paymentHash: got.paymentHash, amountMsat: 12_000 });
  });

  it('unknown usernames get 404 with a LUD-06 ERROR body', async () => {
    for (const name of ['mallory', 'ALICE%20', 'no%2Fslash', 'a'.repeat(65)]) {
      const response = await fetch(`${server.url}/.well-known/lnurlp/${name}`);
      expect(response.status, name).toBe(404);
      expect(await response.json()).toMatchObject({ status: 'ERROR', reason: expect.any(String), code: 'UNKNOWN_USER' });
    }
  });

  it('a bad amount or comment gets 400 with a LUD-06 ERROR body', async () => {
    for (const query of ['amount=abc', 'amount=0', 'amount=999', 'amount=1.5', 'amount=-1000', 'amount=1000000001', `amount=1000&comment=${'x'.repeat(141)}`]) {
      const response = await fetch(`${server.url}/.well-known/lnurlp/alice?${query}`);
      expect(response.status, query).toBe(400);
      expect(await response.json()).toMatchObject({ status: 'ERROR', reason: expect.any(String), code: expect.stringMatching(/^[A-Z_]+$/) });
    }
  });

  it('the function also answers at /api/lnurlp/:username, with its own path as callback', async () => {
    const body = (await (await fetch(`${server.url}/api/lnurlp/fees`)).json()) as { callback: string };
    expect(body.callback).toBe(`${server.url}/api/lnurlp/fees`);
  });
});
