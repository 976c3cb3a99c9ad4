// The 1-sat link proofs a client can make the service pay, through the real
// local server on real PostgreSQL and Redis. LNURL-auth keys are free, so one
// client with many keys used to spend the service's whole daily budget in
// seconds (40 keys x 5 starts = LINK_PROOFS_PER_DAY) and lock everyone else out
// until midnight UTC. Now the proofs are also counted per client IP and per
// address, in the shared store: that client is refused long before the
// service's budget is gone, and others can still link.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logIn } from '../support/lnurl-wallet.js';
import { startOwnerServer, type OwnerServer } from '../support/owner-server.js';
import { rawRequest, type RawAnswer } from '../support/raw-request.js';
import { stackSkipReason, useStack } from '../support/stack.js';

const PER_DAY = 12;
const PER_IP = 4;
const PER_ADDRESS = 2;
const skip = await stackSkipReason();

describe.skipIf(skip !== undefined)(
  `link proofs are budgeted per client IP and per address, under the service's daily cap${skip ? ` [SKIPPED: ${skip}]` : ''}`,
  () => {
    const stack = useStack(() => ({
      AUTH_RATE_LIMIT_PER_MINUTE: '100000',
      LINK_RATE_LIMIT_PER_HOUR: '5',
      LINK_PROOFS_PER_DAY: String(PER_DAY),
      LINK_PROOFS_PER_IP_PER_DAY: String(PER_IP),
      LINK_PROOFS_PER_ADDRESS_PER_DAY: String(PER_ADDRESS),
    }));
    let owner: OwnerServer;
    beforeAll(async () => {
      const ctx = stack.server.ctx;
      // The owners' node shares the service's store, so the service's dev node can pay its invoices.
      owner = await startOwnerServer({ store: ctx.store, settings: { commentAllowed: 64 } });
      await ctx.devNode!.pay((await ctx.devNode!.createInvoice({ amountMsat: 1_000_000 })).invoice);
    });
    afterAll(() => owner?.close());

    const proofsPaid = () => owner.requests.filter((r) => r.stage === 'callback').length;

    /** POST /api/links {address} with a fresh key's session, from the client address `from`. */
    async function startLink(from: string, address: string, token?: string): Promise<RawAnswer> {
      return rawRequest(`${stack.url}/api/links`, {
        method: 'POST',
        from,
        headers: { authorization: `Bearer ${token ?? (await logIn(stack.url))}`, 'content-type': 'application/json' },
        body: JSON.stringify({ address }),
      });
    }

    it('one client with a fresh key for every start is refused after LINK_PROOFS_PER_IP_PER_DAY; another client still links', async () => {
      const attacker = '127.0.0.1';
      const statuses: number[] = [];
      // Three times its budget, each from a key of its own, each to an address of its own.
      for (let i = 0; i < 3 * PER_IP; i++) statuses.push((await startLink(attacker, owner.address(`collector${i}`))).status);
      expect(statuses).toEqual([...Array(PER_IP).fill(200), ...Array(2 * PER_IP).fill(429)]);
      expect(proofsPaid()).toBe(PER_IP);

      const refused = await startLink(attacker, owner.address('collector-more'));
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.body).toMatchObject({ code: 'RATE_LIMITED', error: expect.stringContaining('from this network') });

      // The service's cap is far from spent: someone else links as usual.
      const honest = await startLink('127.0.0.2', owner.address('honest'));
      expect(honest.status, JSON.stringify(honest.body)).toBe(200);
      expect(honest.body).toMatchObject({ status: 'code-sent' });
      // Counted in Redis, where every instance of the service counts.
      expect(await stack.redis.keys('ratelimit:link-proofs-ip:127.0.0.1:*')).toHaveLength(1);
    });

    it('one address gets at most LINK_PROOFS_PER_ADDRESS_PER_DAY proofs, whoever asks from wherever', async () => {
      const address = owner.address('popular');
      expect((await startLink('127.0.0.3', address)).status).toBe(200);
      expect((await startLink('127.0.0.4', address)).status).toBe(200);
      const before = proofsPaid();
      const refused = await startLink('127.0.0.5', address);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ code: 'RATE_LIMITED', error: expect.stringContaining(address) });
      expect(proofsPaid()).toBe(before);
      // The same client may still link another address.
      expect((await startLink('127.0.0.5', owner.address('other'))).status).toBe(200);
    });

    it("the service's daily cap still bounds what all clients together cost; starts refused by a narrower budget spent none of it", async () => {
      const sent = proofsPaid();
      const left = PER_DAY - sent;
      expect(left).toBeGreaterThan(0);
      // A client of its own for each start: only the service's cap can refuse.
      for (let i = 0; i < left; i++) expect((await startLink(`127.0.1.${i + 1}`, owner.address(`last${i}`))).status).toBe(200);
      const over = await startLink('127.0.2.1', owner.address('over'));
      expect(over.status).toBe(429);
      expect(over.body).toMatchObject({ code: 'RATE_LIMITED', error: expect.stringContaining('The service has sent as many link proofs as it will today') });
      expect(proofsPaid()).toBe(PER_DAY);
    });
  },
);
