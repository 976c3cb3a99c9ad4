// The replay store's decisions as Lua, so each runs inside Redis as one
// atomic step whatever the number of instances sharing it.
//
// A payment hash's key is a Redis hash: `n` the uses held, and one field per
// attempt (`a:<attempt>`): '1' while it holds a use, '0' once released or
// barred. Keeping attempts is what lets a claim whose answer was lost be
// undone exactly (decision 3 in docs/architecture.md): a blind decrement
// could give back a use another request holds. The rule is the one the
// in-process stores keep (claimUse and releaseUse in core/replay.ts), written
// again in Lua; tests/support/replay-contract.ts runs the same cases on both.
import { checkAttempt, usesLifetimeMs, type ReplayStore } from '../core/replay.js';

// Keys written before attempts were kept are plain counters: each script
// first turns one into a hash with the same count and expiry.
const FROM_COUNTER = `
if redis.call('TYPE', KEYS[1]).ok == 'string' then
  local n = redis.call('GET', KEYS[1])
  local ttl = redis.call('PTTL', KEYS[1])
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'n', n)
  if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
end
`;

/**
 * Claims a use: ARGV[1] the uses a payment buys, ARGV[2] the key's lifetime
 * in ms (given when the key is created, kept after), ARGV[3] the attempt.
 * Answers 1 when the attempt holds a use (claimed now or before), 0 when none
 * is left or the attempt was released.
 */
export const CLAIM_SCRIPT = `${FROM_COUNTER}
local attempt = 'a:' .. ARGV[3]
local held = redis.call('HGET', KEYS[1], attempt)
if held then return tonumber(held) end
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if n == nil or n >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'n', n + 1, attempt, '1')
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
`;

/**
 * Gives back the use attempt ARGV[1] holds, or bars it from claiming later
 * when it holds none (ARGV[2]: the key's lifetime in ms should this create
 * it). Answers 1 when a use was given back.
 */
export const RELEASE_SCRIPT = `${FROM_COUNTER}
local attempt = 'a:' .. ARGV[1]
local held = redis.call('HGET', KEYS[1], attempt)
redis.call('HSET', KEYS[1], attempt, '0')
if held == '1' then
  redis.call('HINCRBY', KEYS[1], 'n', -1)
  return 1
end
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/** The uses held, without claiming one. */
export const USES_SCRIPT = `
if redis.call('TYPE', KEYS[1]).ok == 'string' then return tonumber(redis.call('GET', KEYS[1])) or 0 end
return tonumber(redis.call('HGET', KEYS[1], 'n') or '0') or 0
`;

export const DEFAULT_PREFIX = 'l402:uses:';

/** A replay store on Redis, which can also say how many uses a payment hash has had. */
export interface SharedReplayStore extends ReplayStore {
  claim(paymentHash: string, maxUses: number, expiresAt: number, attempt: string): Promise<boolean>;
  /** Uses held now (claimed and not given back), without claiming one. */
  usedCount(paymentHash: string): Promise<number>;
}

/** A ReplayStore from a way to run a script: what the Upstash and Redis stores share. */
export function scriptedReplayStore(run: (script: string, key: string, args: string[]) => Promise<unknown>, prefix: string): SharedReplayStore {
  const lifetimeMs = (expiresAt: number) => String(usesLifetimeMs(expiresAt));
  return {
    async claim(paymentHash, maxUses, expiresAt, attempt) {
      return Number(await run(CLAIM_SCRIPT, prefix + paymentHash, [String(maxUses), lifetimeMs(expiresAt), checkAttempt(attempt)])) === 1;
    },
    async release(paymentHash, attempt, expiresAt) {
      await run(RELEASE_SCRIPT, prefix + paymentHash, [checkAttempt(attempt), lifetimeMs(expiresAt)]);
    },
    async usedCount(paymentHash) {
      return Number(await run(USES_SCRIPT, prefix + paymentHash, []));
    },
  };
}
