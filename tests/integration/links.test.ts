// Linking a Lightning Address to an LNURL-auth key through the real local
// server: the service pays the owner's server (tests/support/owner-server.ts,
// a real LNURL-pay server on 127.0.0.1) 1 sat with a code in the LUD-12
// comment, and the owner types the code back. On real PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../lib/db/index.js';
import { logIn, testWallet, type TestWallet } from '../support/lnurl-wallet.js';
import { startOwnerServer, type OwnerServer } from '../support/owner-server.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn } from '../support/server.js';

const postgres = (await databaseBackends()).find((b) => b.name === 'PostgreSQL')!;
const ATTEMPTS = 5;
const STARTS_PER_HOUR = 6;

interface ErrorBody {
  error: string;
  code: string;
  attemptsLeft?: number;
}

describe.skipIf(postgres.skip !== undefined)(`linking Lightning Addresses${postgres.skip ? ` [SKIPPED: ${postgres.skip}]` : ''}`, () => {
  const running = useDevServerOn(postgres, () => ({
    AUTH_RATE_LIMIT_PER_MINUTE: '100000',
    LINK_CODE_ATTEMPTS: String(ATTEMPTS),
    LINK_RATE_LIMIT_PER_HOUR: String(STARTS_PER_HOUR),
    // Every link here starts from this one client: the per-client and per-address budgets have a file of their own (link-budgets.test.ts).
    LINK_PROOFS_PER_IP_PER_DAY: '100000',
  }));
  let url = '';
  let db: Database;
  let owner: OwnerServer;

  beforeAll(async () => {
    url = running.url;
    db = running.db;
    const ctx = running.ctx;
    // The owner's node shares the service's store: the service's dev node can pay its invoices.
    owner = await startOwnerServer({ store: ctx.store, settings: { commentAllowed: 64 } });
    // Fund the service's wallet: it pays the 1-sat proofs from its balance.
    await ctx.devNode!.pay((await ctx.devNode!.createInvoice({ amountMsat: 1_000_000 })).invoice);
  });
  afterAll(() => owner?.close());

  const login = (wallet?: TestWallet) => logIn(url, wallet);

  function links(token: string | null, method: 'GET' | 'POST' | 'DELETE' = 'GET', body?: unknown): Promise<Response> {
    return fetch(`${url}/api/links`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }

  async function expectError(response: Response, status: number, code: string): Promise<ErrorBody> {
    const body = (await response.json()) as ErrorBody;
    expect(response.status, JSON.stringify(body)).toBe(status);
    expect(body).toEqual(expect.objectContaining({ error: expect.any(String), code }));
    return body;
  }

  /** The code the owner's server received in the comment of the last payment to `username`. */
  function receivedCode(username: string): string {
    const comments = owner.requests.filter((r) => r.stage === 'callback' && r.username === username && r.comment !== undefined);
    const match = /^L402 link code ([0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4})$/.exec(comments.at(-1)?.comment ?? '');
    expect(match, JSON.stringify(comments)).not.toBeNull();
    return match![1]!;
  }

  async function start(token: string, address: string) {
    const response = await links(token, 'POST', { address });
    const body = (await response.json()) as { address: string; status: string; expiresAt?: string; attempts?: number };
    expect(response.status, JSON.stringify(body)).toBe(200);
    return body;
  }

  it('pays the address 1 sat with a code in the comment; the code links it; the key then sees it', async () => {
    owner.setBehaviour('honest', { commentAllowed: 64 });
    const token = await login();
    const address = owner.address('alice');
    const before = (await owner.node.balance()).balanceMsat;
    const started = await start(token, address.toUpperCase());
    expect(started).toEqual({ address, status: 'code-sent', expiresAt: expect.any(String), attempts: ATTEMPTS });
    expect(Math.abs(Date.parse(started.expiresAt!) - Date.now() - 15 * 60_000)).toBeLessThan(60_000);
    expect((await owner.node.balance()).balanceMsat - before).toBe(1000);
    const code = receivedCode('alice');
    expect(owner.requests.filter((r) => r.stage === 'callback' && r.username === 'alice').at(-1)!.amountMsat).toBe(1000);

    // Not linked until the code comes back.
    expect(await (await links(token)).json()).toEqual({ addresses: [] });
    // Typed as people type: lower case, no dash.
    const confirmed = await links(token, 'POST', { address, code: code.toLowerCase().replace('-', '') });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.json()).toEqual({ address, status: 'linked' });
    expect(await (await links(token)).json()).toEqual({ addresses: [address] });
    const me = (await (await fetch(`${url}/api/login`, { headers: { authorization: `Bearer ${token}` } })).json()) as { addresses: string[] };
    expect(me.addresses).toEqual([address]);

    // The code is spent; starting again for a linked address pays nothing.
    await expectError(await links(token, 'POST', { address, code }), 404, 'LINK_CODE_NOT_FOUND');
    const paid = (await owner.node.balance()).balanceMsat;
    expect(await start(token, address)).toEqual({ address, status: 'linked' });
    expect((await owner.node.balance()).balanceMsat).toBe(paid);
  });

  it('a wrong code is refused and counted; after LINK_CODE_ATTEMPTS wrong codes even the right one is refused', async () => {
    owner.setBehaviour('honest', { commentAllowed: 64 });
    const token = await login();
    const address = owner.address('bob');
    await start(token, address);
    const code = receivedCode('bob');
    const wrong = code === 'AAAA-AAAA' ? 'BBBB-BBBB' : 'AAAA-AAAA';
    for (let left = ATTEMPTS - 1; left >= 0; left--) {
      const refused = await expectError(await links(token, 'POST', { address, code: wrong }), 400, 'WRONG_CODE');
      expect(refused.attemptsLeft).toBe(left);
    }
    await expectError(await links(token, 'POST', { address, code }), 404, 'LINK_CODE_NOT_FOUND');
    expect(await (await links(token)).json()).toEqual({ addresses: [] });
  });

  it('guesses sent all at once are still counted: at most LINK_CODE_ATTEMPTS are checked', async () => {
    owner.setBehaviour('honest', { commentAllowed: 64 });
    const token = await login();
    const address = owner.address('carol');
    await start(token, address);
    const code = receivedCode('carol');
    // 40 guesses at once, none of them the code.
    const guesses = Array.from({ length: 40 }, (_, i) => `ZZZZ${String(1000 + i).slice(-4)}`).filter((g) => g !== code.replace('-', ''));
    const answers = await Promise.all(guesses.map((g) => links(token, 'POST', { address, code: g })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 400)).toHaveLength(ATTEMPTS);
    expect(statuses.every((s) => s === 400 || s === 404 || s === 429)).toBe(true);
    await expectError(await links(token, 'POST', { address, code }), 404, 'LINK_CODE_NOT_FOUND');
  });

  it('a code sent for one key does not link the address to another key', async () => {
    owner.setBehaviour('honest', { commentAllowed: 64 });
    const [alice, mallory] = [await login(), await login()];
    const address = owner.address('dave');
    await start(alice, address);
    const code = receivedCode('dave');
    await expectError(await links(mallory, 'POST', { address, code }), 404, 'LINK_CODE_NOT_FOUND');
    expect((await links(alice, 'POST', { address, code })).status).toBe(200);
    expect(await (await links(mallory)).json()).toEqual({ addresses: [] });
  });

  it('an address whose server takes no comments (or too short ones): 422 COMMENT_NOT_SUPPORTED, nothing paid', async () => {
    const token = await login();
    for (const commentAllowed of [0, 10]) {
      owner.setBehaviour('honest', { commentAllowed });
      const before = (await owner.node.balance()).balanceMsat;
      const callbacks = owner.requests.filter((r) => r.stage === 'callback').length;
      const refused = await expectError(await links(token, 'POST', { address: owner.address('erin') }), 422, 'COMMENT_NOT_SUPPORTED');
      expect(refused.error).toMatch(/comment/);
      expect((await owner.node.balance()).balanceMsat).toBe(before);
      expect(owner.requests.filter((r) => r.stage === 'callback')).toHaveLength(callbacks);
    }
    // And no code waits to be guessed.
    await expectError(await links(token, 'POST', { address: owner.address('erin'), code: 'AAAA-AAAA' }), 404, 'LINK_CODE_NOT_FOUND');
  });

  it('an address server that misbehaves is refused with a clear 4xx and nothing is paid', async () => {
    const token = await login();
    owner.setBehaviour('invoice-more-than-asked', { commentAllowed: 64 });
    const before = (await owner.node.balance()).balanceMsat;
    const refused = await expectError(await links(token, 'POST', { address: owner.address('frank') }), 422, 'ADDRESS_REFUSED');
    expect(refused).toEqual(expect.objectContaining({ reason: 'INVOICE_AMOUNT_MISMATCH' }));
    expect((await owner.node.balance()).balanceMsat).toBe(before);
  });

  it('needs a session, and a Lightning Address', async () => {
    await expectError(await links(null), 401, 'SESSION_REQUIRED');
    await expectError(await links(null, 'POST', { address: owner.address('alice') }), 401, 'SESSION_REQUIRED');
    const token = await login();
    await expectError(await links(token, 'POST', { address: 'not an address' }), 400, 'INVALID_REQUEST');
    await expectError(await links(token, 'POST', {}), 400, 'INVALID_REQUEST');
    await expectError(await links(token, 'POST', { address: owner.address('alice'), code: '' }), 400, 'INVALID_REQUEST');
    await expectError(await links(token, 'POST', { address: owner.address('alice'), extra: 1 }), 400, 'INVALID_REQUEST');
  });

  it('starting links is limited per key (each costs a sat): 429 with Retry-After', async () => {
    owner.setBehaviour('honest', { commentAllowed: 64 });
    const token = await login();
    for (let i = 0; i < STARTS_PER_HOUR; i++) await start(token, owner.address(`many${i}`));
    const limited = await links(token, 'POST', { address: owner.address('one-too-many') });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    await expectError(limited, 429, 'RATE_LIMITED');
    // Another key has its own budget.
    expect((await start(await login(), owner.address('one-too-many'))).status).toBe('code-sent');
  });

  it('all keys together get a daily budget of link proofs (keys are free, sats are not): then 429 for every key, nothing paid', async () => {
    owner.setBehaviour('honest', { commentAllowed: 64 });
    const real = running.ctx;
    const window = Math.floor(Date.now() / 86_400_000);
    const sentToday = Number((await real.store.get(`ratelimit:link-proofs:service:${window}`)) ?? 0);
    running.use({ ...real, config: { ...real.config, auth: { ...real.config.auth, linkProofsPerDay: sentToday + 2 } } });
    try {
      for (let i = 0; i < 2; i++) expect((await start(await login(), owner.address(`budget${i}`))).status).toBe('code-sent');
      const received = (await owner.node.balance()).balanceMsat;
      const refused = await links(await login(), 'POST', { address: owner.address('budget-over') });
      await expectError(refused, 429, 'RATE_LIMITED');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await owner.node.balance()).balanceMsat).toBe(received);
    } finally {
      running.restore();
    }
  });

  it('DELETE /api/links removes a link of this key only', async () => {
    const [alice, bob] = [testWallet(), testWallet()];
    await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $3), ($2, $3)', [alice.pubkey, bob.pubkey, 'shared@example.com']);
    const token = await login(alice);
    const removed = await links(token, 'DELETE', { address: 'Shared@Example.com' });
    expect(await removed.json()).toEqual({ address: 'shared@example.com', removed: true });
    expect(await (await links(token)).json()).toEqual({ addresses: [] });
    expect(await (await links(await login(bob))).json()).toEqual({ addresses: ['shared@example.com'] });
  });
});
