// The replay store's two decisions as Lua, so each runs inside Redis as one
// atomic step whatever the number of instances sharing it.
import type { ReplayStore } from '../l402/replay.js';

/**
 * Claims a use: KEYS[1] the payment hash's counter, ARGV[1] the uses a payment
 * buys, ARGV[2] the counter's lifetime in ms (given when the key is created,
 * kept after). Answers 1 when the use was claimed, 0 when none is left.
 */
export const CLAIM_SCRIPT = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n == nil or n >= tonumber(ARGV[1]) then return 0 end
if n == 0 then redis.call('SET', KEYS[1], '1', 'PX', ARGV[2]) else redis.call('INCR', KEYS[1]) end
return 1
`;

/** Gives a use back; a counter that expired stays gone (no key without expiry). */
export const RELEASE_SCRIPT = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n == nil or n <= 0 then return 0 end
return redis.call('DECR', KEYS[1])
`;

// Kept past token expiry so clock skew between instances cannot reopen a token.
const SKEW_MS = 5 * 60_000;

export const DEFAULT_PREFIX = 'l402:uses:';

/** A ReplayStore from a way to run a script: what the Upstash and Redis stores share. */
export function scriptedReplayStore(run: (script: string, key: string, args: string[]) => Promise<unknown>, prefix: string): ReplayStore {
  return {
    async claim(paymentHash, maxUses, expiresAt) {
      const ttlMs = Math.max(1000, Math.ceil(expiresAt * 1000 - Date.now())) + SKEW_MS;
      return Number(await run(CLAIM_SCRIPT, prefix + paymentHash, [String(maxUses), String(ttlMs)])) === 1;
    },
    async release(paymentHash) {
      await run(RELEASE_SCRIPT, prefix + paymentHash, []);
    },
  };
}
