// The session ledger's rules (applySession in ledger.ts) as one Lua script,
// so each action runs inside Redis as one atomic step whatever the number of
// instances sharing it. The package's session-ledger contract test runs the
// same random action sequences here and on the in-process ledger, answer by
// answer.
//
// A session is a Redis hash under <prefix><id>: the fields below, and one
// field `c:<creditId>` per credit taken (the deposit's and each top-up's
// payment hash), so a top-up is credited once, and one field `v:<id>` per open
// reservation (metering by reported usage), removed when it is settled. Two sorted sets index the
// sessions the sweeper must visit: <prefix>idle (open sessions by the time
// they turn idle) and <prefix>refunds (refunds by when they may be taken).
// A session's key never expires while money may be owed on it; once its
// refund is settled (paid, given up, or nothing to refund) it is kept for
// SESSION_RETENTION_MS, so its close answer can still be read.
import {
  SESSION_RETENTION_MS,
  checkedAmount,
  checkedOpen,
  checkedReservationId,
  checkedUsage,
  type RefundClaim,
  type RefundState,
  type SessionAnswer,
  type SessionLedger,
  type SessionRecord,
  type SessionRefusal,
  type SettleAnswer,
} from './ledger.js';

// KEYS: session, idle index, refund index. ARGV: action, now, id, retention, then the action's own.
// Numbers are written with %d: Lua's own number-to-string keeps 14 digits only.
export const SESSION_SCRIPT = `
local key, idleKey, refundKey = KEYS[1], KEYS[2], KEYS[3]
local action, now, id, retention = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local function int(n) return string.format('%d', n) end
local function num(field) return tonumber(redis.call('HGET', key, field) or '0') end
local function reply(outcome, extra) return {outcome, redis.call('HGETALL', key), extra or ''} end
local function indexRefund()
  local state = redis.call('HGET', key, 'rs')
  if state == 'due' or state == 'failed' or state == 'paying' then
    redis.call('ZADD', refundKey, num('rx'), id)
  else
    redis.call('ZREM', refundKey, id)
    if state == 'paid' or state == 'given-up' or state == 'none' then redis.call('PEXPIRE', key, retention) end
  end
end
local function close(because)
  redis.call('HSET', key, 'st', 'closed', 'cat', int(now), 'cb', because)
  local left = num('paid') - num('spent')
  redis.call('HSET', key, 'rs', left > 0 and 'due' or 'none', 'ra', int(left), 'rn', '0', 'rx', int(now))
  redis.call('ZREM', idleKey, id)
  indexRefund()
end
local function idlePast() return now >= num('last') + num('idle') end

if action == 'open' then
  if redis.call('EXISTS', key) == 1 then return reply('exists') end
  redis.call('HSET', key, 'id', id, 'st', 'open', 'paid', ARGV[5], 'spent', '0', 'ret', ARGV[6], 'idle', ARGV[7], 'last', int(now), 'c:' .. id, ARGV[5])
  redis.call('ZADD', idleKey, now + tonumber(ARGV[7]), id)
  return reply('ok')
end
if redis.call('EXISTS', key) == 0 then return {'unknown', {}, ''} end
local open = redis.call('HGET', key, 'st') == 'open'
-- Takes amount from an open, active session's balance; else why not (closed, idle: closed now, insufficient), taking nothing.
local function take(amount)
  if not open then return 'closed' end
  if idlePast() then close('idle') return 'idle' end
  if num('paid') - num('spent') < tonumber(amount) then return 'insufficient' end
  redis.call('HINCRBY', key, 'spent', amount)
  redis.call('HSET', key, 'last', int(now))
  redis.call('ZADD', idleKey, now + num('idle'), id)
end

if action == 'spend' then return reply(take(ARGV[5]) or 'ok') end

if action == 'reserve' then
  -- A reservation is spent now, as a spend is; its settle gives back what was not used.
  local held = 'v:' .. ARGV[5]
  if redis.call('HEXISTS', key, held) == 1 then return reply('duplicate') end
  local refused = take(ARGV[6])
  if refused then return reply(refused) end
  redis.call('HSET', key, held, ARGV[6])
  return reply('ok')
end

if action == 'settle' then
  -- Closed: the close counted the reservation as spent, and its refund was reckoned without it; it stays so.
  if not open then return reply('closed') end
  local held = 'v:' .. ARGV[5]
  local reserved = redis.call('HGET', key, held)
  if not reserved then return reply('not-reserved') end
  reserved = tonumber(reserved)
  redis.call('HDEL', key, held)
  local used = tonumber(ARGV[6])
  local beyond = math.min(math.max(0, used - reserved), num('paid') - num('spent'))
  local charged = math.min(used, reserved) + beyond
  redis.call('HINCRBY', key, 'spent', int(charged - reserved))
  redis.call('HSET', key, 'last', int(now))
  redis.call('ZADD', idleKey, now + num('idle'), id)
  return reply('ok', int(charged))
end

if action == 'topUp' then
  local credit = 'c:' .. ARGV[5]
  if redis.call('HEXISTS', key, credit) == 1 then return reply('duplicate') end
  if open and idlePast() then close('idle') open = false end
  if open then
    redis.call('HSET', key, credit, ARGV[6])
    redis.call('HINCRBY', key, 'paid', ARGV[6])
    redis.call('HSET', key, 'last', int(now))
    redis.call('ZADD', idleKey, now + num('idle'), id)
    return reply('ok')
  end
  local state = redis.call('HGET', key, 'rs')
  -- The refund is being paid, paid or given up: not taken (no credit written), the payment stays the client's.
  if not (state == 'due' or state == 'failed' or state == 'none') then return reply('refund-started') end
  redis.call('HSET', key, credit, ARGV[6])
  redis.call('HINCRBY', key, 'paid', ARGV[6])
  redis.call('HINCRBY', key, 'ra', ARGV[6])
  if state == 'none' then redis.call('HSET', key, 'rs', 'due', 'rx', int(now)) redis.call('PERSIST', key) end
  indexRefund()
  return reply('closed')
end

if action == 'close' then
  if not open then return reply('closed') end
  if ARGV[5] == 'idle' and not idlePast() then return reply('not-due') end
  close(ARGV[5])
  return reply('ok')
end

if action == 'claimRefund' then
  local state, at = redis.call('HGET', key, 'rs'), num('rx')
  if not ((state == 'due' or state == 'failed' or state == 'paying') and at <= now) then return reply('not-due') end
  redis.call('HSET', key, 'rs', 'paying', 'rx', int(now + tonumber(ARGV[5])))
  redis.call('HINCRBY', key, 'rn', 1)
  indexRefund()
  return reply('ok', state == 'paying' and '1' or '0')
end

if action == 'settleRefund' then
  if redis.call('HGET', key, 'rs') ~= 'paying' or redis.call('HGET', key, 'rn') ~= ARGV[5] then return reply('stale') end
  local outcome = ARGV[6]
  if outcome == 'paid' then
    redis.call('HSET', key, 'rs', 'paid', 'rp', int(now))
  elseif outcome == 'given-up' then
    redis.call('HSET', key, 'rs', 'given-up', 'rr', ARGV[7])
  else
    redis.call('HSET', key, 'rs', 'failed', 're', ARGV[7], 'rx', ARGV[8])
    if ARGV[9] == '1' then redis.call('HINCRBY', key, 'rc', 1) end
  end
  indexRefund()
  return reply('ok')
end
return redis.error_reply('unknown session action ' .. action)
`;

export const DEFAULT_SESSION_PREFIX = 'l402:session:';

/** Runs the script with its three keys: what the Upstash and Redis ledgers share. */
export type ScriptRunner = (script: string, keys: string[], args: string[]) => Promise<unknown>;

/** Reads the hash's flat field list into a record (credit fields left out). */
export function readSessionHash(flat: readonly unknown[]): SessionRecord | undefined {
  if (flat.length === 0) return undefined;
  const fields = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) fields.set(String(flat[i]), String(flat[i + 1]));
  const text = (name: string) => fields.get(name);
  const whole = (name: string) => Number(fields.get(name) ?? '0');
  const record: SessionRecord = {
    id: text('id') ?? '',
    status: text('st') === 'closed' ? 'closed' : 'open',
    paidMsat: whole('paid'),
    spentMsat: whole('spent'),
    returnInvoice: text('ret') ?? '',
    idleTimeoutMs: whole('idle'),
    lastActiveAt: whole('last'),
  };
  if (record.status === 'closed') {
    record.closedAt = whole('cat');
    record.closedBecause = text('cb') === 'idle' ? 'idle' : 'client';
    record.refund = { state: (text('rs') ?? 'none') as RefundState, amountMsat: whole('ra'), attempts: whole('rn'), nextAttemptAt: whole('rx') };
    if (fields.has('re')) record.refund.lastError = text('re');
    if (fields.has('rr')) record.refund.reason = text('rr');
    if (fields.has('rp')) record.refund.paidAt = whole('rp');
    if (fields.has('rc')) record.refund.inFlightChecks = whole('rc');
  }
  return record;
}

/** A SessionLedger from a way to run the script: `keys` are the session's, the idle index's and the refund index's. */
export function scriptedSessionLedger(run: ScriptRunner, prefix = DEFAULT_SESSION_PREFIX): SessionLedger {
  const idleKey = `${prefix}idle`;
  const refundKey = `${prefix}refunds`;
  const call = async (action: string, id: string, now: number, extra: string[] = []) => {
    if (id === 'idle' || id === 'refunds') throw new RangeError(`"${id}" is not a session id`);
    const reply = (await run(
      SESSION_SCRIPT,
      [prefix + id, idleKey, refundKey],
      [action, String(Math.floor(now)), id, String(SESSION_RETENTION_MS), ...extra],
    )) as [string, unknown[], string];
    const [outcome, flat, extraReply] = reply;
    const session = readSessionHash(flat);
    const balanceMsat = session ? session.paidMsat - session.spentMsat : 0;
    const answer: SessionAnswer =
      outcome === 'ok' ? { ok: true, balanceMsat, session: session! } : { ok: false, reason: outcome as SessionRefusal, balanceMsat, session };
    return { answer, extra: extraReply };
  };
  const ids = async (key: string, now: number, limit: number) =>
    (
      (await run(
        `return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])`,
        [key],
        [String(Math.floor(now)), String(limit)],
      )) as string[]
    ).map(String);
  return {
    async open(session, now) {
      const { id, depositMsat, returnInvoice, idleTimeoutMs } = checkedOpen(session);
      return (await call('open', id, now, [String(depositMsat), returnInvoice, String(idleTimeoutMs)])).answer;
    },
    async spend(id, amountMsat, now) {
      return (await call('spend', id, now, [String(checkedAmount(amountMsat))])).answer;
    },
    async topUp(id, creditId, amountMsat, now) {
      return (await call('topUp', id, now, [creditId, String(checkedAmount(amountMsat))])).answer;
    },
    async reserve(id, reservationId, amountMsat, now) {
      return (await call('reserve', id, now, [checkedReservationId(reservationId), String(checkedUsage(amountMsat))])).answer;
    },
    async settle(id, reservationId, usedMsat, now): Promise<SettleAnswer> {
      const { answer, extra } = await call('settle', id, now, [checkedReservationId(reservationId), String(checkedUsage(usedMsat))]);
      return answer.ok ? { ...answer, chargedMsat: Number(extra) } : answer;
    },
    async close(id, because, now) {
      return (await call('close', id, now, [because])).answer;
    },
    async get(id) {
      const flat = (await run(`return redis.call('HGETALL', KEYS[1])`, [prefix + id], [])) as unknown[];
      return readSessionHash(flat) ?? null;
    },
    async claimRefund(id, now, leaseMs) {
      const { answer, extra } = await call('claimRefund', id, now, [String(Math.floor(leaseMs))]);
      if (!answer.ok || !answer.session.refund) return null;
      const { session } = answer;
      const claim: RefundClaim = {
        id,
        returnInvoice: session.returnInvoice,
        amountMsat: session.refund!.amountMsat,
        attempt: session.refund!.attempts,
        uncertain: extra === '1',
        inFlightChecks: session.refund!.inFlightChecks ?? 0,
      };
      return claim;
    },
    async settleRefund(id, attempt, outcome, now) {
      const args = outcome.paid
        ? ['paid']
        : 'givenUp' in outcome
          ? ['given-up', outcome.givenUp]
          : ['failed', outcome.error, String(Math.floor(outcome.retryAt)), outcome.inFlight ? '1' : '0'];
      return (await call('settleRefund', id, now, [String(attempt), ...args])).answer;
    },
    refundsDue: (now, limit) => ids(refundKey, now, limit),
    idleSessions: (now, limit) => ids(idleKey, now, limit),
  };
}
