// The prepaid-session ledger (packages/l402-paywall/src/schemes/session/): the same
// cases on the in-process ledger and on the Lua script through ioredis and
// @upstash/redis (over the REST emulator), on the real redis-server: a balance
// is never overspent however requests race, a top-up is credited once, a
// closed session refuses everything and refunds exactly what was not spent,
// once, across failed attempts and abandoned leases. Then random action
// sequences run on a store and on the in-process rules side by side, answer by
// answer.
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis as UpstashRedis } from '@upstash/redis';
import fc from 'fast-check';
import { Redis as IORedis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionAnswer, SessionLedger } from '../../src/schemes/session/ledger.js';
import { memorySessionLedger } from '../../src/schemes/session/memory-ledger.js';
import { scriptedSessionLedger } from '../../src/schemes/session/ledger-scripts.js';
import { REDIS_URL, redisReachable } from '../support/redis.js';
import { startUpstashRestServer, type UpstashRestServer } from '../support/upstash-rest-server.js';

const redisUp = await redisReachable();
let upstash: UpstashRestServer | undefined;
let ioredis: IORedis | undefined;
beforeAll(async () => {
  if (!redisUp) return;
  upstash = await startUpstashRestServer({ redisUrl: REDIS_URL, token: 'session-ledger-token' });
  ioredis = new IORedis(REDIS_URL);
});
afterAll(async () => {
  await upstash?.close();
  ioredis?.disconnect();
});

const prefix = () => `test:session:${randomUUID()}:`;
const ledgers: [string, () => SessionLedger, boolean][] = [
  ['memorySessionLedger', () => memorySessionLedger(), false],
  ['the Lua ledger through ioredis', () => scriptedSessionLedger((script, keys, args) => ioredis!.eval(script, keys.length, ...keys, ...args), prefix()), true],
  [
    'the Lua ledger through @upstash/redis (REST)',
    () => {
      const redis = new UpstashRedis({ url: upstash!.url, token: upstash!.token, automaticDeserialization: false });
      return scriptedSessionLedger((script, keys, args) => redis.eval(script, keys, args), prefix());
    },
    true,
  ],
];

const hash = () => randomBytes(32).toString('hex');
const SAT = 1000;
const HOUR = 3600_000;
const T0 = 1_800_000_000_000;
const open = (ledger: SessionLedger, units = 20, idleTimeoutMs = HOUR, id = hash()) =>
  ledger.open({ id, depositMsat: units * SAT, returnInvoice: `lnbcrt1return${id.slice(0, 8)}`, idleTimeoutMs }, T0).then((answer) => ({ id, answer }));
const outcome = (answer: SessionAnswer) => (answer.ok ? 'ok' : answer.reason);

describe.each(ledgers)('%s', (_name, makeLedger, needsRedis) => {
  const run = needsRedis && !redisUp ? it.skip : it;

  run('opens once: a replayed open is refused and changes nothing', async () => {
    const ledger = makeLedger();
    const { id, answer } = await open(ledger);
    expect(answer).toMatchObject({ ok: true, balanceMsat: 20 * SAT, session: { id, status: 'open', paidMsat: 20 * SAT, spentMsat: 0 } });
    const again = await ledger.open({ id, depositMsat: 99 * SAT, returnInvoice: 'lnbcrt1other', idleTimeoutMs: HOUR }, T0 + 1);
    expect(again).toMatchObject({ ok: false, reason: 'exists', balanceMsat: 20 * SAT });
    expect(await ledger.get(id)).toMatchObject({ paidMsat: 20 * SAT, returnInvoice: `lnbcrt1return${id.slice(0, 8)}` });
    // The deposit's own payment hash is never credited again as a top-up.
    expect(outcome(await ledger.topUp(id, id, 20 * SAT, T0 + 2))).toBe('duplicate');
  });

  run('100 concurrent requests of one unit on a 20-unit balance: exactly 20 served', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger);
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => ledger.spend(id, SAT, T0 + 10 + i)));
    expect(answers.filter((a) => a.ok)).toHaveLength(20);
    expect(answers.filter((a) => !a.ok).every((a) => !a.ok && a.reason === 'insufficient')).toBe(true);
    expect(await ledger.get(id)).toMatchObject({ paidMsat: 20 * SAT, spentMsat: 20 * SAT });
    // A spend larger than what is left is refused whole, never partly taken.
    expect(outcome(await ledger.spend(id, 1, T0 + 200))).toBe('insufficient');
  });

  run('a top-up is credited once, however often and concurrently it is presented', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger);
    const topUp = hash();
    const answers = await Promise.all(Array.from({ length: 10 }, () => ledger.topUp(id, topUp, 10 * SAT, T0 + 5)));
    expect(answers.map(outcome).sort()).toEqual(['ok', ...Array(9).fill('duplicate')].sort());
    expect(await ledger.get(id)).toMatchObject({ paidMsat: 30 * SAT });
    expect(outcome(await ledger.topUp(hash(), hash(), SAT, T0))).toBe('unknown');
  });

  run('close: everything refused after it; the refund is what was paid in minus what was spent, to the millisatoshi', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger);
    await ledger.spend(id, 3 * SAT + 7, T0 + 1);
    await ledger.topUp(id, hash(), 5 * SAT, T0 + 2);
    const closed = await ledger.close(id, 'client', T0 + 3);
    expect(closed).toMatchObject({
      ok: true,
      session: { status: 'closed', closedBecause: 'client', refund: { state: 'due', amountMsat: 25 * SAT - 3 * SAT - 7, attempts: 0 } },
    });
    expect(outcome(await ledger.spend(id, 1, T0 + 4))).toBe('closed');
    expect(outcome(await ledger.close(id, 'client', T0 + 5))).toBe('closed');
    expect(outcome(await ledger.open({ id, depositMsat: SAT, returnInvoice: 'x', idleTimeoutMs: HOUR }, T0 + 6))).toBe('exists');
    // A top-up paid as it closed is never kept: folded into the refund not yet paid.
    expect(outcome(await ledger.topUp(id, hash(), 2 * SAT, T0 + 7))).toBe('closed');
    expect((await ledger.get(id))?.refund?.amountMsat).toBe(27 * SAT - 3 * SAT - 7);
    expect(await ledger.refundsDue(T0 + 8, 10)).toEqual([id]);
  });

  run('a refund is paid once: one claim among racers, a failed attempt retried later, a stale outcome refused', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger);
    await ledger.spend(id, 4 * SAT, T0 + 1);
    await ledger.close(id, 'client', T0 + 2);
    const claims = await Promise.all(Array.from({ length: 10 }, () => ledger.claimRefund(id, T0 + 3, 30_000)));
    const taken = claims.filter((c) => c !== null);
    expect(taken).toEqual([{ id, returnInvoice: `lnbcrt1return${id.slice(0, 8)}`, amountMsat: 16 * SAT, attempt: 1, uncertain: false, inFlightChecks: 0 }]);
    expect(await ledger.refundsDue(T0 + 4, 10)).toEqual([]);
    // The first attempt fails: retried from retryAt, not before.
    expect(await ledger.settleRefund(id, 1, { paid: false, error: 'no route', retryAt: T0 + 60_000 }, T0 + 5)).toMatchObject({
      ok: true,
      session: { refund: { state: 'failed', lastError: 'no route', nextAttemptAt: T0 + 60_000 } },
    });
    expect(await ledger.claimRefund(id, T0 + 59_999, 30_000)).toBeNull();
    expect(await ledger.refundsDue(T0 + 60_000, 10)).toEqual([id]);
    const second = await ledger.claimRefund(id, T0 + 60_000, 30_000);
    expect(second).toMatchObject({ attempt: 2, amountMsat: 16 * SAT, uncertain: false });
    // The first attempt's late outcome cannot overwrite the second's.
    expect(outcome(await ledger.settleRefund(id, 1, { paid: true }, T0 + 60_001))).toBe('stale');
    expect(await ledger.settleRefund(id, 2, { paid: true }, T0 + 60_002)).toMatchObject({
      ok: true,
      session: { refund: { state: 'paid', paidAt: T0 + 60_002, amountMsat: 16 * SAT } },
    });
    expect(await ledger.claimRefund(id, T0 + 999_999, 30_000)).toBeNull();
    expect(await ledger.refundsDue(T0 + 999_999, 10)).toEqual([]);
  });

  run('a top-up after the refund started is refused and not taken, whether the refund is being paid, paid or given up', async () => {
    const ledger = makeLedger();
    const sessions = await Promise.all([open(ledger), open(ledger), open(ledger)]);
    for (const { id } of sessions) {
      await ledger.spend(id, 4 * SAT, T0 + 1);
      await ledger.close(id, 'client', T0 + 2);
      await ledger.claimRefund(id, T0 + 3, 30_000);
    }
    const [paying, paid, givenUp] = sessions.map((s) => s.id) as [string, string, string];
    await ledger.settleRefund(paid, 1, { paid: true }, T0 + 4);
    await ledger.settleRefund(givenUp, 1, { paid: false, givenUp: 'the return invoice expired' }, T0 + 4);
    for (const [id, state] of [
      [paying, 'paying'],
      [paid, 'paid'],
      [givenUp, 'given-up'],
    ] as const) {
      const before = await ledger.get(id);
      const topUp = hash();
      const refused = await ledger.topUp(id, topUp, 5 * SAT, T0 + 5);
      expect(refused).toMatchObject({ ok: false, reason: 'refund-started', balanceMsat: 16 * SAT, session: { id, refund: { state, amountMsat: 16 * SAT } } });
      // Nothing recorded: not the amount, not the credit (the same payment presented again is refused the same way, not as a duplicate).
      expect(await ledger.get(id)).toEqual(before);
      expect(before).not.toHaveProperty('strandedMsat');
      expect(outcome(await ledger.topUp(id, topUp, 5 * SAT, T0 + 6))).toBe('refund-started');
      expect(await ledger.get(id)).toEqual(before);
    }
    // The top-up's payment was not taken: it can still credit a session that is open.
    const { id: other } = await open(ledger);
    const topUp = hash();
    expect(outcome(await ledger.topUp(paid, topUp, 5 * SAT, T0 + 7))).toBe('refund-started');
    expect(await ledger.topUp(other, topUp, 5 * SAT, T0 + 8)).toMatchObject({ ok: true, balanceMsat: 25 * SAT });
  });

  run('an attempt that vanished (its lease ran out) is taken again as uncertain; a given-up refund stays visible', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger);
    await ledger.close(id, 'client', T0 + 1);
    expect(await ledger.claimRefund(id, T0 + 2, 1_000)).toMatchObject({ attempt: 1, uncertain: false });
    expect(await ledger.claimRefund(id, T0 + 1_001, 1_000)).toBeNull();
    expect(await ledger.refundsDue(T0 + 1_002, 10)).toEqual([id]);
    expect(await ledger.claimRefund(id, T0 + 1_002, 1_000)).toMatchObject({ attempt: 2, uncertain: true, amountMsat: 20 * SAT });
    await ledger.settleRefund(id, 2, { paid: false, givenUp: 'the return invoice expired' }, T0 + 1_003);
    expect(await ledger.get(id)).toMatchObject({ refund: { state: 'given-up', reason: 'the return invoice expired', amountMsat: 20 * SAT } });
    expect(await ledger.refundsDue(T0 + 10 * HOUR, 10)).toEqual([]);
  });

  run('an attempt that found the payment in flight is counted apart, for the next claim to leave out of giving up', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger);
    await ledger.close(id, 'client', T0 + 1);
    let at = T0 + 2;
    for (const attempt of [1, 2, 3]) {
      expect(await ledger.claimRefund(id, at, 1_000)).toMatchObject({ attempt, inFlightChecks: attempt - 1 });
      await ledger.settleRefund(id, attempt, { paid: false, error: 'an earlier attempt is still in flight', retryAt: at + 10, inFlight: true }, at + 1);
      at += 10;
    }
    expect(await ledger.get(id)).toMatchObject({ refund: { state: 'failed', attempts: 3, inFlightChecks: 3 } });
    // A failure that is not an in-flight check leaves the count as it was.
    expect(await ledger.claimRefund(id, at, 1_000)).toMatchObject({ attempt: 4, inFlightChecks: 3 });
    await ledger.settleRefund(id, 4, { paid: false, error: 'no route', retryAt: at + 10 }, at + 1);
    expect(await ledger.claimRefund(id, at + 10, 1_000)).toMatchObject({ attempt: 5, inFlightChecks: 3 });
  });

  run('an idle session is closed on its next touch or by the sweeper, and refunded', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger, 20, 60_000);
    await ledger.spend(id, SAT, T0 + 30_000); // active again: idle from T0 + 90 s
    expect(await ledger.idleSessions(T0 + 89_999, 10)).toEqual([]);
    expect(outcome(await ledger.close(id, 'idle', T0 + 89_999))).toBe('not-due');
    expect(await ledger.idleSessions(T0 + 90_000, 10)).toEqual([id]);
    expect(await ledger.spend(id, SAT, T0 + 90_000)).toMatchObject({
      ok: false,
      reason: 'idle',
      session: { status: 'closed', closedBecause: 'idle', refund: { state: 'due', amountMsat: 19 * SAT } },
    });
    expect(await ledger.idleSessions(T0 + 90_001, 10)).toEqual([]);
    const other = await open(ledger, 5, 60_000);
    expect(await ledger.close(other.id, 'idle', T0 + 60_000)).toMatchObject({ ok: true, session: { closedBecause: 'idle', refund: { amountMsat: 5 * SAT } } });
    // Everything spent: nothing to refund, nothing waits.
    const spent = await open(ledger, 1);
    await ledger.spend(spent.id, SAT, T0 + 1);
    expect(await ledger.close(spent.id, 'client', T0 + 2)).toMatchObject({ ok: true, session: { refund: { state: 'none', amountMsat: 0 } } });
    expect(await ledger.claimRefund(spent.id, T0 + 3, 1_000)).toBeNull();
  });

  run('a reservation is spent at once, and settled once: the unused part back, never more than reserved', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger, 100);
    expect(await ledger.reserve!(id, 'r1', 49 * SAT, T0 + 1)).toMatchObject({ ok: true, balanceMsat: 51 * SAT, session: { spentMsat: 49 * SAT } });
    // The same reservation again: refused, nothing more taken.
    expect(await ledger.reserve!(id, 'r1', 49 * SAT, T0 + 2)).toMatchObject({ ok: false, reason: 'duplicate', balanceMsat: 51 * SAT });
    expect(await ledger.settle!(id, 'r1', 36 * SAT, T0 + 3)).toMatchObject({
      ok: true,
      chargedMsat: 36 * SAT,
      balanceMsat: 64 * SAT,
      session: { spentMsat: 36 * SAT },
    });
    // Settled once: a second settle (a retry, another instance) changes nothing.
    const again = await Promise.all([ledger.settle!(id, 'r1', 0, T0 + 4), ledger.settle!(id, 'r1', 0, T0 + 4)]);
    for (const answer of again) expect(answer).toMatchObject({ ok: false, reason: 'not-reserved', balanceMsat: 64 * SAT });
    expect(outcome(await ledger.settle!(id, 'never-made', 0, T0 + 5))).toBe('not-reserved');
    // Usage beyond the reservation is spent as far as the balance covers it, no further.
    expect(await ledger.reserve!(id, 'r2', 10 * SAT, T0 + 6)).toMatchObject({ ok: true, balanceMsat: 54 * SAT });
    expect(await ledger.settle!(id, 'r2', 15 * SAT, T0 + 7)).toMatchObject({ ok: true, chargedMsat: 15 * SAT, balanceMsat: 49 * SAT });
    expect(await ledger.reserve!(id, 'r3', 40 * SAT, T0 + 8)).toMatchObject({ ok: true, balanceMsat: 9 * SAT });
    expect(await ledger.settle!(id, 'r3', 1000 * SAT, T0 + 9)).toMatchObject({ ok: true, chargedMsat: 49 * SAT, balanceMsat: 0 });
    expect(await ledger.get(id)).toMatchObject({ paidMsat: 100 * SAT, spentMsat: 100 * SAT });
    // A reservation the balance cannot cover is refused whole; one of 0 is taken (and can be settled up to the balance).
    expect(await ledger.reserve!(id, 'r4', 1, T0 + 10)).toMatchObject({ ok: false, reason: 'insufficient', balanceMsat: 0 });
    expect(outcome(await ledger.reserve!(id, 'r5', 0, T0 + 11))).toBe('ok');
    expect(await ledger.settle!(id, 'r5', 0, T0 + 12)).toMatchObject({ ok: true, chargedMsat: 0 });
  });

  run('concurrent reservations never overspend: 30 racing reservations of 5 units on 100 units, exactly 20 taken', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger, 100);
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => ledger.reserve!(id, `race-${i}`, 5 * SAT, T0 + 1 + i)));
    const taken = answers.flatMap((answer, i) => (answer.ok ? [`race-${i}`] : []));
    expect(taken).toHaveLength(20);
    // Each settles to 2 of its 5 units, twice over and concurrently: 3 come back from each, once.
    await Promise.all([...taken, ...taken].map((reservation) => ledger.settle!(id, reservation, 2 * SAT, T0 + 100)));
    expect(await ledger.get(id)).toMatchObject({ spentMsat: 40 * SAT });
  });

  run('a close with a reservation open counts it spent: its settle after the close is refused and the refund never grows', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger, 100);
    await ledger.reserve!(id, 'streaming', 49 * SAT, T0 + 1);
    expect(await ledger.close(id, 'client', T0 + 2)).toMatchObject({
      ok: true,
      session: { spentMsat: 49 * SAT, refund: { state: 'due', amountMsat: 51 * SAT } },
    });
    expect(await ledger.settle!(id, 'streaming', 1 * SAT, T0 + 3)).toMatchObject({ ok: false, reason: 'closed', balanceMsat: 51 * SAT });
    expect(await ledger.get(id)).toMatchObject({ spentMsat: 49 * SAT, refund: { amountMsat: 51 * SAT } });
    expect(outcome(await ledger.reserve!(id, 'late', 0, T0 + 4))).toBe('closed');
    // Idle: a reservation on a session idle past its timeout closes it, as a spend does.
    const idle = await open(ledger, 10, 60_000);
    expect(await ledger.reserve!(idle.id, 'r', SAT, T0 + 60_000)).toMatchObject({
      ok: false,
      reason: 'idle',
      session: { status: 'closed', closedBecause: 'idle' },
    });
  });

  run('a reservation never settled (its process died) stays spent: the close refunds around it', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger, 100);
    await ledger.reserve!(id, 'orphan', 30 * SAT, T0 + 1);
    await ledger.spend(id, SAT, T0 + 2);
    expect(await ledger.close(id, 'client', T0 + 3)).toMatchObject({ ok: true, session: { refund: { amountMsat: 69 * SAT } } });
  });

  run('refuses reserved and used amounts that are not whole millisatoshis, and malformed reservation ids', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger);
    for (const amount of [-1, 1.5, Number.NaN, 2 ** 53]) {
      await expect(ledger.reserve!(id, 'r', amount, T0)).rejects.toThrow(RangeError);
      await expect(ledger.settle!(id, 'r', amount, T0)).rejects.toThrow(RangeError);
    }
    for (const reservationId of ['', 'a b', 'x'.repeat(65), 'c:credit']) await expect(ledger.reserve!(id, reservationId, SAT, T0)).rejects.toThrow(RangeError);
  });

  run('refuses amounts that are not whole millisatoshis above zero', async () => {
    const ledger = makeLedger();
    const { id } = await open(ledger);
    for (const amount of [0, -1, 1.5, Number.NaN, 2 ** 53]) await expect(ledger.spend(id, amount, T0)).rejects.toThrow(RangeError);
  });
});

describe.skipIf(!redisUp)('random action sequences: the Lua ledger answers as the in-process rules do', () => {
  const action = fc.oneof(
    fc.record({ kind: fc.constant('spend' as const), session: fc.nat(2), units: fc.integer({ min: 1, max: 8 }), dt: fc.nat(40_000) }),
    fc.record({ kind: fc.constant('topUp' as const), session: fc.nat(2), credit: fc.nat(4), units: fc.integer({ min: 1, max: 8 }), dt: fc.nat(40_000) }),
    fc.record({ kind: fc.constant('close' as const), session: fc.nat(2), idle: fc.boolean(), dt: fc.nat(40_000) }),
    fc.record({ kind: fc.constant('claim' as const), session: fc.nat(2), dt: fc.nat(40_000) }),
    fc.record({ kind: fc.constant('settle' as const), session: fc.nat(2), attempt: fc.integer({ min: 1, max: 3 }), paid: fc.nat(3), dt: fc.nat(40_000) }),
    fc.record({ kind: fc.constant('reserve' as const), session: fc.nat(2), reservation: fc.nat(3), units: fc.nat(6), dt: fc.nat(40_000) }),
    fc.record({ kind: fc.constant('settleUse' as const), session: fc.nat(2), reservation: fc.nat(3), units: fc.nat(9), dt: fc.nat(40_000) }),
  );
  it.each(ledgers.filter(([, , redis]) => redis))(
    '%s',
    async (_name, makeLedger) => {
      await fc.assert(
        fc.asyncProperty(fc.array(action, { maxLength: 30 }), async (actions) => {
          const model = memorySessionLedger();
          const store = makeLedger();
          const ids = [hash(), hash(), hash()];
          const credits = [hash(), hash(), hash(), hash(), hash()];
          for (const [i, id] of ids.entries()) {
            for (const ledger of [model, store])
              await ledger.open({ id, depositMsat: (i + 3) * SAT, returnInvoice: `lnbcrt1r${i}`, idleTimeoutMs: 60_000 }, T0);
          }
          let now = T0;
          for (const step of actions) {
            now += step.dt;
            const id = ids[step.session]!;
            const both = async <T>(call: (ledger: SessionLedger) => Promise<T>) => [await call(model), await call(store)] as const;
            let pair: readonly [unknown, unknown];
            if (step.kind === 'spend') pair = await both((l) => l.spend(id, step.units * SAT, now));
            else if (step.kind === 'topUp') pair = await both((l) => l.topUp(id, credits[step.credit]!, step.units * SAT, now));
            else if (step.kind === 'close') pair = await both((l) => l.close(id, step.idle ? 'idle' : 'client', now));
            else if (step.kind === 'claim') pair = await both((l) => l.claimRefund(id, now, 30_000));
            else if (step.kind === 'reserve') pair = await both((l) => l.reserve!(id, `r${step.reservation}`, step.units * SAT, now));
            else if (step.kind === 'settleUse') pair = await both((l) => l.settle!(id, `r${step.reservation}`, step.units * SAT, now));
            else {
              const outcomes = [
                { paid: true as const },
                { paid: false as const, error: 'no route', retryAt: now + 10_000 },
                { paid: false as const, givenUp: 'expired' },
                { paid: false as const, error: 'in flight', retryAt: now + 10_000, inFlight: true },
              ];
              pair = await both((l) => l.settleRefund(id, step.attempt, outcomes[step.paid]!, now));
            }
            expect(pair[1], JSON.stringify(step)).toEqual(pair[0]);
          }
          for (const id of ids) expect(await store.get(id)).toEqual(await model.get(id));
          expect((await store.refundsDue(now, 10)).sort()).toEqual((await model.refundsDue(now, 10)).sort());
          expect((await store.idleSessions(now, 10)).sort()).toEqual((await model.idleSessions(now, 10)).sort());
        }),
        { numRuns: 40 },
      );
    },
    120_000,
  );
});
