// Right to erasure (POST /api/delete-data) through the real local server: a
// real key signs an erasure challenge; every payment of the addresses linked
// to it, its links and its sessions go, in one transaction; other owners'
// rows and the split ledger stay; the erasure is recorded without personal
// data. On PGlite and on real PostgreSQL (when reachable).
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { DatabaseUnavailable, type Database } from '../../lib/db/index.js';
import { decodeLnurl, encodeLnurl } from '../../lib/lightning/lnurl.js';
import { eraseKey } from '../../lib/service/accounts/erasure.js';
import { testWallet, type ChallengeBody, type TestWallet } from '../support/lnurl-wallet.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn } from '../support/server.js';

const backends = await databaseBackends();

interface ErrorBody {
  error: string;
  code: string;
}

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(`erasure on ${backend.name}${backend.skip ? ` [SKIPPED: ${backend.skip}]` : ''}`, () => {
    const running = useDevServerOn(backend, () => ({ AUTH_RATE_LIMIT_PER_MINUTE: '100000' }));
    let url = '';
    let db: Database;
    beforeAll(() => {
      url = running.url;
      db = running.db;
    });

    async function login(wallet: TestWallet): Promise<string> {
      const c = (await (await fetch(`${url}/api/lnurl-auth`)).json()) as ChallengeBody;
      expect((await wallet.scan(c.lnurl)).body.status).toBe('OK');
      return ((await (await fetch(`${url}/api/lnurl-auth?${new URLSearchParams({ k1: c.k1, pollToken: c.pollToken })}`)).json()) as { token: string }).token;
    }

    async function erasureChallenge(): Promise<ChallengeBody> {
      const response = await fetch(`${url}/api/delete-data`, { method: 'POST' });
      expect(response.status).toBe(200);
      return (await response.json()) as ChallengeBody;
    }

    function pollErasure(k1: string, pollToken: string): Promise<Response> {
      return fetch(`${url}/api/delete-data?${new URLSearchParams({ k1, pollToken })}`);
    }

    async function expectError(response: Response, status: number, code: string): Promise<void> {
      const body = (await response.json()) as ErrorBody;
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(body).toEqual(expect.objectContaining({ error: expect.any(String), code }));
    }

    /** Payments for `address` (null: a payment with no owner, e.g. sovereign mode). */
    async function addPayments(address: string | null, count: number): Promise<void> {
      for (let i = 0; i < count; i++) {
        await db.query('INSERT INTO payments (payment_hash, endpoint, amount_sats, owner_address) VALUES ($1, $2, $3, $4)', [
          randomBytes(32).toString('hex'),
          '/api/x',
          10 + i,
          address,
        ]);
      }
    }

    async function countWhere(sql: string, params: unknown[]): Promise<number> {
      return Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params))[0]!.n);
    }

    /** Everything of every table, for "nothing else changed" comparisons. */
    async function snapshot(table: string): Promise<string[]> {
      return (await db.query(`SELECT * FROM ${table}`)).map((row) => JSON.stringify(row)).sort();
    }

    it('deletes the payments of the linked addresses, the links and the sessions of the signing key, and nothing else', async () => {
      const [alice, bob] = [testWallet(), testWallet()];
      const suffix = randomBytes(4).toString('hex');
      const [a1, a2, b1] = [`alice-${suffix}@example.com`, `alice2-${suffix}@example.com`, `bob-${suffix}@example.com`];
      await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2), ($1, $3), ($4, $5)', [alice.pubkey, a1, a2, bob.pubkey, b1]);
      await addPayments(a1, 3);
      await addPayments(a2, 2);
      await addPayments(b1, 4);
      await addPayments(null, 1);
      // The split ledger owes money to owners: it is not personal analytics and stays.
      await db.query(
        `INSERT INTO splits (payment_hash, owner_address, amount_msat, owner_msat, fee_msat, state) VALUES ($1, $2, 1000000, 997000, 3000, 'accrued')`,
        [randomBytes(32).toString('hex'), a1],
      );
      const aliceTokens = [await login(alice), await login(alice)];
      const bobToken = await login(bob);
      const othersBefore = {
        payments: (await snapshot('payments')).filter((row) => !row.includes(a1) && !row.includes(a2)),
        links: (await snapshot('address_links')).filter((row) => !row.includes(alice.pubkey)),
        sessions: (await snapshot('auth_sessions')).filter((row) => !row.includes(alice.pubkey)),
        splits: await snapshot('splits'),
        apis: await snapshot('apis'),
        pro: await snapshot('pro_subscriptions'),
      };
      const erasuresBefore = await countWhere('erasures', []);

      const c = await erasureChallenge();
      expect(Object.keys(c).sort()).toEqual(['expiresAt', 'k1', 'lnurl', 'pollToken', 'qr']);
      const callback = new URL(decodeLnurl(c.lnurl));
      expect(Object.fromEntries(callback.searchParams)).toEqual({ tag: 'login', k1: c.k1, action: 'auth' });
      expect((await pollErasure(c.k1, c.pollToken)).status).toBe(202);
      // Nothing is deleted before the wallet signs.
      expect(await countWhere('payments WHERE owner_address IN ($1, $2)', [a1, a2])).toBe(5);

      expect(await alice.scan(c.lnurl)).toEqual({ status: 200, body: { status: 'OK' } });
      const done = await pollErasure(c.k1, c.pollToken);
      expect(done.status).toBe(200);
      expect(await done.json()).toEqual({ status: 'ok', deleted: { payments: 5, links: 2, sessions: 2 } });
      await expectError(await pollErasure(c.k1, c.pollToken), 410, 'ALREADY_COLLECTED');

      // No row of that key remains.
      expect(await countWhere('payments WHERE owner_address IN ($1, $2)', [a1, a2])).toBe(0);
      expect(await countWhere('address_links WHERE pubkey = $1', [alice.pubkey])).toBe(0);
      expect(await countWhere('auth_sessions WHERE pubkey = $1', [alice.pubkey])).toBe(0);
      for (const token of aliceTokens)
        await expectError(await fetch(`${url}/api/login`, { headers: { authorization: `Bearer ${token}` } }), 401, 'SESSION_INVALID');

      // Other owners' rows (and everything else) are untouched.
      expect((await snapshot('payments')).filter((row) => !row.includes(a1) && !row.includes(a2))).toEqual(othersBefore.payments);
      expect(await snapshot('address_links')).toEqual(othersBefore.links);
      expect(await snapshot('auth_sessions')).toEqual(othersBefore.sessions);
      expect(await snapshot('splits')).toEqual(othersBefore.splits);
      expect(await snapshot('apis')).toEqual(othersBefore.apis);
      expect(await snapshot('pro_subscriptions')).toEqual(othersBefore.pro);
      expect(await countWhere('payments WHERE owner_address = $1', [b1])).toBe(4);
      const bobLogin = await fetch(`${url}/api/login`, { headers: { authorization: `Bearer ${bobToken}` } });
      expect(await bobLogin.json()).toEqual(expect.objectContaining({ pubkey: bob.pubkey, addresses: [b1] }));

      // The erasure is recorded, without the key or the addresses.
      expect(await countWhere('erasures', [])).toBe(erasuresBefore + 1);
      const [record] = await db.query('SELECT * FROM erasures ORDER BY erased_at DESC LIMIT 1');
      expect(Object.keys(record!).sort()).toEqual(['erased_at', 'id', 'links', 'payments', 'sessions']);
      expect(record).toEqual(expect.objectContaining({ payments: 5, links: 2, sessions: 2 }));
      const columns = await db.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns WHERE table_name = 'erasures' ORDER BY column_name`,
      );
      expect(columns.map((c) => c.column_name)).toEqual(['erased_at', 'id', 'links', 'payments', 'sessions']);
      expect(JSON.stringify(await db.query('SELECT * FROM erasures'))).not.toMatch(new RegExp(`${alice.pubkey}|alice`));
    });

    it('leaves no trace of the erased addresses in the stats roll-up (which days they were paid on)', async () => {
      const [hana, ivan] = [testWallet(), testWallet()];
      const suffix = randomBytes(4).toString('hex');
      const [h1, i1] = [`hana-${suffix}@example.com`, `ivan-${suffix}@example.com`];
      await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2), ($3, $4)', [hana.pubkey, h1, ivan.pubkey, i1]);
      await addPayments(h1, 2);
      await addPayments(i1, 3);
      const hanaHash = (await db.query<{ payment_hash: string }>('SELECT payment_hash FROM payments WHERE owner_address = $1 LIMIT 1', [h1]))[0]!.payment_hash;
      await db.query(`INSERT INTO splits (payment_hash, owner_address, amount_msat, owner_msat, fee_msat, state) VALUES ($1, $2, 10000, 9970, 30, 'accrued')`, [
        hanaHash,
        h1,
      ]);
      expect(await countWhere('stats_daily WHERE owner_address = $1', [h1])).toBeGreaterThan(0);
      const ivanCells = await db.query('SELECT * FROM stats_daily WHERE owner_address = $1', [i1]);

      const c = await erasureChallenge();
      await hana.scan(c.lnurl);
      expect(await (await pollErasure(c.k1, c.pollToken)).json()).toEqual({ status: 'ok', deleted: { payments: 2, links: 1, sessions: 0 } });
      expect(await countWhere('stats_daily WHERE owner_address = $1', [h1])).toBe(0);
      expect(await db.query('SELECT * FROM stats_daily WHERE owner_address = $1', [i1])).toEqual(ivanCells);
    });

    it('a key with nothing linked erases its sessions and is told so', async () => {
      const carol = testWallet();
      await login(carol);
      const c = await erasureChallenge();
      await carol.scan(c.lnurl);
      expect(await (await pollErasure(c.k1, c.pollToken)).json()).toEqual({ status: 'ok', deleted: { payments: 0, links: 0, sessions: 1 } });
    });

    it('a login QR code cannot erase, and an erasure QR code cannot log in', async () => {
      const dave = testWallet();
      const address = `dave-${randomBytes(4).toString('hex')}@example.com`;
      await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2)', [dave.pubkey, address]);
      await addPayments(address, 2);

      const login = (await (await fetch(`${url}/api/lnurl-auth`)).json()) as ChallengeBody;
      await dave.scan(login.lnurl);
      await expectError(await pollErasure(login.k1, login.pollToken), 404, 'CHALLENGE_NOT_FOUND');
      expect(await countWhere('payments WHERE owner_address = $1', [address])).toBe(2);

      const erase = await erasureChallenge();
      await dave.scan(erase.lnurl);
      await expectError(await fetch(`${url}/api/lnurl-auth?${new URLSearchParams({ k1: erase.k1, pollToken: erase.pollToken })}`), 404, 'CHALLENGE_NOT_FOUND');
      // The erasure itself did run when the wallet signed (the signature is the consent) ...
      expect(await countWhere('payments WHERE owner_address = $1', [address])).toBe(0);
      // ... and only its own page learns the counts, once.
      await expectError(await pollErasure(erase.k1, Buffer.from(randomBytes(32)).toString('base64url')), 401, 'POLL_TOKEN_INVALID');
      expect(await (await pollErasure(erase.k1, erase.pollToken)).json()).toEqual({ status: 'ok', deleted: { payments: 2, links: 1, sessions: 0 } });
    });

    it('an erasure LNURL edited to show a login erases nothing when the victim signs it (issue 19)', async () => {
      const victim = testWallet();
      const address = `victim-${randomBytes(4).toString('hex')}@example.com`;
      await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2)', [victim.pubkey, address]);
      await addPayments(address, 3);
      const token = await login(victim);

      const c = await erasureChallenge();
      const tampered = (edit: (params: URLSearchParams) => void): string => {
        const callback = new URL(decodeLnurl(c.lnurl));
        edit(callback.searchParams);
        return encodeLnurl(callback.toString());
      };
      // What the attacker hands the victim as a "login" QR code: action changed, or removed, or another tag.
      for (const lnurl of [
        tampered((p) => p.set('action', 'login')),
        tampered((p) => p.delete('action')),
        tampered((p) => p.set('tag', 'withdrawRequest')),
        tampered((p) => p.delete('tag')),
      ]) {
        expect(await victim.scan(lnurl)).toEqual({ status: 200, body: { status: 'ERROR', reason: expect.stringMatching(/altered/) } });
      }
      expect(await countWhere('payments WHERE owner_address = $1', [address])).toBe(3);
      expect(await countWhere('address_links WHERE pubkey = $1', [victim.pubkey])).toBe(1);
      expect((await fetch(`${url}/api/login`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      expect((await pollErasure(c.k1, c.pollToken)).status).toBe(202);

      // A login LNURL edited to ask for "auth" is refused too, and logs nobody in.
      const l = (await (await fetch(`${url}/api/lnurl-auth`)).json()) as ChallengeBody;
      const editedLogin = new URL(decodeLnurl(l.lnurl));
      editedLogin.searchParams.set('action', 'auth');
      expect((await victim.scan(encodeLnurl(editedLogin.toString()))).body.status).toBe('ERROR');
      expect((await fetch(`${url}/api/lnurl-auth?${new URLSearchParams({ k1: l.k1, pollToken: l.pollToken })}`)).status).toBe(202);

      // The untampered erasure QR code still works after the refusals: it was not used up.
      expect(await victim.scan(c.lnurl)).toEqual({ status: 200, body: { status: 'OK' } });
      expect(await (await pollErasure(c.k1, c.pollToken)).json()).toEqual({ status: 'ok', deleted: { payments: 3, links: 1, sessions: 1 } });
    });

    it('a forged signature erases nothing', async () => {
      const [erin, mallory] = [testWallet(), testWallet()];
      const address = `erin-${randomBytes(4).toString('hex')}@example.com`;
      await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2)', [erin.pubkey, address]);
      await addPayments(address, 1);
      const c = await erasureChallenge();
      const callback = new URL(decodeLnurl(c.lnurl));
      callback.searchParams.set('sig', mallory.sign(c.k1));
      callback.searchParams.set('key', erin.pubkey);
      expect(await (await fetch(callback)).json()).toEqual({ status: 'ERROR', reason: expect.stringMatching(/does not verify/) });
      expect((await pollErasure(c.k1, c.pollToken)).status).toBe(202);
      expect(await countWhere('payments WHERE owner_address = $1', [address])).toBe(1);
      expect(await countWhere('address_links WHERE pubkey = $1', [erin.pubkey])).toBe(1);
    });

    it('is one transaction: a failure half way leaves every row in place', async () => {
      const frank = testWallet();
      const address = `frank-${randomBytes(4).toString('hex')}@example.com`;
      await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2)', [frank.pubkey, address]);
      await addPayments(address, 2);
      const erasures = await countWhere('erasures', []);
      // The last statement (the erasure record) fails: the deletions before it must roll back.
      const failing: Database = {
        ...db,
        transaction: (work) =>
          db.transaction((tx) =>
            work({
              ...tx,
              exec: (script) => tx.exec(script),
              query: (text, params) => (text.startsWith('INSERT INTO erasures') ? Promise.reject(new Error('disk full')) : tx.query(text, params)),
            }),
          ),
      };
      await expect(eraseKey(failing, frank.pubkey)).rejects.toThrow('disk full');
      expect(await countWhere('payments WHERE owner_address = $1', [address])).toBe(2);
      expect(await countWhere('address_links WHERE pubkey = $1', [frank.pubkey])).toBe(1);
      expect(await countWhere('erasures', [])).toBe(erasures);
    });

    it('with the database down the wallet hears a retryable ERROR (503, Retry-After), and the same k1 works once it is back', async () => {
      const gina = testWallet();
      const address = `gina-${randomBytes(4).toString('hex')}@example.com`;
      await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2)', [gina.pubkey, address]);
      const c = await erasureChallenge();
      running.use({ ...running.ctx, database: () => Promise.reject(new DatabaseUnavailable('connection refused')) });
      try {
        const callback = new URL(decodeLnurl(c.lnurl));
        callback.searchParams.set('sig', gina.sign(c.k1));
        callback.searchParams.set('key', gina.pubkey);
        const response = await fetch(callback);
        expect(response.status).toBe(503);
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(await response.json()).toEqual(expect.objectContaining({ status: 'ERROR', reason: expect.any(String), code: 'TEMPORARILY_UNAVAILABLE' }));
        expect((await pollErasure(c.k1, c.pollToken)).status).toBe(202);
      } finally {
        running.restore();
      }
      expect(await gina.scan(c.lnurl)).toEqual({ status: 200, body: { status: 'OK' } });
      expect(await (await pollErasure(c.k1, c.pollToken)).json()).toEqual({ status: 'ok', deleted: { payments: 0, links: 1, sessions: 0 } });
    });

    it('POST /api/delete-data takes no input and GET needs k1 and pollToken', async () => {
      await expectError(await fetch(`${url}/api/delete-data`), 400, 'INVALID_REQUEST');
      await expectError(await fetch(`${url}/api/delete-data?k1=${'ab'.repeat(32)}`), 400, 'INVALID_REQUEST');
      await expectError(await fetch(`${url}/api/delete-data`, { method: 'DELETE' }), 405, 'METHOD_NOT_ALLOWED');
    });
  });
}
