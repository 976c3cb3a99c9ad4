// An LNURL-auth signature is consent to what the wallet showed: the callback
// refuses a tag or action other than the ones its k1 was issued with, so an
// erasure QR code edited to read "login" erases nothing when the victim signs
// it. Through the real local server on real PostgreSQL and real Redis (where
// challenges live); tests/integration/erasure.test.ts covers PGlite too.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeLnurl, encodeLnurl } from '../../lib/lightning/lnurl.js';
import { testWallet, type ChallengeBody } from '../support/lnurl-wallet.js';
import { stackSkipReason, useStack } from '../support/stack.js';

const skip = await stackSkipReason();

describe.skipIf(skip !== undefined)(`LNURL-auth purpose (local server, PostgreSQL, Redis)${skip ? ` [SKIPPED: ${skip}]` : ''}`, () => {
  const stack = useStack(() => ({ AUTH_RATE_LIMIT_PER_MINUTE: '100000' }));

  function edited(lnurl: string, edit: (params: URLSearchParams) => void): string {
    const url = new URL(decodeLnurl(lnurl));
    edit(url.searchParams);
    return encodeLnurl(url.toString());
  }

  it('an erasure challenge relabelled as a login is refused and erases nothing; the untouched one still works', async () => {
    const victim = testWallet();
    const address = `victim-${randomBytes(4).toString('hex')}@example.com`;
    await stack.db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2)', [victim.pubkey, address]);
    await stack.db.query('INSERT INTO payments (payment_hash, endpoint, amount_sats, owner_address) VALUES ($1, $2, 5, $3)', [
      randomBytes(32).toString('hex'),
      '/api/x',
      address,
    ]);

    const erase = (await (await fetch(`${stack.url}/api/delete-data`, { method: 'POST' })).json()) as ChallengeBody;
    const asLogin = edited(erase.lnurl, (p) => p.set('action', 'login'));
    expect(new URL(decodeLnurl(asLogin)).searchParams.get('action')).toBe('login'); // what the victim's wallet shows
    expect(await victim.scan(asLogin)).toEqual({ status: 200, body: { status: 'ERROR', reason: expect.stringMatching(/altered/) } });
    expect(await victim.scan(edited(erase.lnurl, (p) => p.delete('action')))).toMatchObject({ body: { status: 'ERROR' } });
    const count = async (sql: string) => Number((await stack.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, [address]))[0]!.n);
    expect(await count('payments WHERE owner_address = $1')).toBe(1);
    expect(await count('address_links WHERE address = $1')).toBe(1);
    const poll = () => fetch(`${stack.url}/api/delete-data?${new URLSearchParams({ k1: erase.k1, pollToken: erase.pollToken })}`);
    expect((await poll()).status).toBe(202);

    // A login challenge relabelled as "auth" logs nobody in.
    const login = (await (await fetch(`${stack.url}/api/lnurl-auth`)).json()) as ChallengeBody;
    expect((await victim.scan(edited(login.lnurl, (p) => p.set('action', 'auth')))).body.status).toBe('ERROR');
    expect((await fetch(`${stack.url}/api/lnurl-auth?${new URLSearchParams({ k1: login.k1, pollToken: login.pollToken })}`)).status).toBe(202);

    expect(await victim.scan(erase.lnurl)).toEqual({ status: 200, body: { status: 'OK' } });
    expect(await (await poll()).json()).toEqual({ status: 'ok', deleted: { payments: 1, links: 1, sessions: 0 } });
  });
});
