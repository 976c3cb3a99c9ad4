// An in-process store that survives a restart: the memory store, with every
// change made through it appended as one JSON line to a file and replayed at start-up. For the
// embedded dev node under `npm start` (its invoices, paid marks and balances
// must outlive the process, like a real node's). Local and single-process
// only: two processes on one file would each see only their own writes.
//
// Line format: {"k": key, "v": value or null (deleted), "x": expiry in unix ms or null}.
// The last line of a key wins; at start-up the file is rewritten with the live
// keys only, so it does not grow across runs.
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { EXPIRED_SWEEP_INTERVAL_MS, createMemoryStore, usesKeptUntil } from './memory.js';
import type { KeyValueStore, SetOptions } from './types.js';

interface JournalLine {
  k: string;
  v: string | null;
  x: number | null;
}

/**
 * Journals the writes made through it to `file`, over `inner` (an in-process
 * store, which may be shared: writes made to it directly are not journaled).
 */
export function createJournaledStore(file: string, inner: KeyValueStore = createMemoryStore()): KeyValueStore {
  if (inner.kind !== 'memory') throw new Error('createJournaledStore journals an in-process store only');
  /** Expiry (unix ms) of keys that have one; the memory store keeps its own, this copy is for the journal. */
  const expiries = new Map<string, number>();
  const live = new Map<string, JournalLine>();

  if (existsSync(file)) {
    for (const text of readFileSync(file, 'utf8').split('\n')) {
      if (text.trim() === '') continue;
      let line: JournalLine;
      try {
        line = JSON.parse(text) as JournalLine;
      } catch {
        continue; // a line cut short by a crash: the ones before it still count
      }
      if (typeof line.k !== 'string') continue;
      if (line.v === null) live.delete(line.k);
      else live.set(line.k, line);
    }
  }
  const now = Date.now();
  for (const [key, line] of live) {
    if (line.x !== null && line.x <= now) {
      live.delete(key);
      continue;
    }
    // The memory store applies synchronously inside its async wrapper: loaded before any caller runs.
    void inner.set(key, line.v!, line.x === null ? {} : { ttlMs: line.x - now });
    if (line.x !== null) expiries.set(key, line.x);
  }
  mkdirSync(dirname(file), { recursive: true });
  const compacted = `${file}.tmp`;
  writeFileSync(compacted, [...live.values()].map((line) => JSON.stringify(line) + '\n').join(''), { mode: 0o600 });
  renameSync(compacted, file);

  // The copy of an expired key's expiry is forgotten as the memory store forgets the key: else it would grow with every key ever written.
  let prunedAt = Date.now();
  function pruneExpiries(): void {
    const now = Date.now();
    if (now - prunedAt < EXPIRED_SWEEP_INTERVAL_MS) return;
    prunedAt = now;
    for (const [key, at] of expiries) if (at <= now) expiries.delete(key);
  }

  async function record(key: string): Promise<void> {
    const value = await inner.get(key);
    if (value === null) expiries.delete(key);
    const line: JournalLine = { k: key, v: value, x: value === null ? null : (expiries.get(key) ?? null) };
    appendFileSync(file, JSON.stringify(line) + '\n');
    pruneExpiries();
  }

  return {
    kind: 'memory',
    get: (key) => inner.get(key),
    async set(key: string, value: string, options: SetOptions = {}) {
      const written = await inner.set(key, value, options);
      if (written) {
        if (options.ttlMs === undefined) expiries.delete(key);
        else expiries.set(key, Date.now() + options.ttlMs);
        await record(key);
      }
      return written;
    },
    async del(key) {
      const removed = await inner.del(key);
      if (removed > 0) await record(key);
      return removed;
    },
    async incrementBelow(key, max, ttlMs) {
      const existed = (await inner.get(key)) !== null;
      const value = await inner.incrementBelow(key, max, ttlMs);
      if (value !== null) {
        if (!existed) expiries.set(key, Date.now() + ttlMs);
        await record(key);
      }
      return value;
    },
    async decrementToZero(key) {
      const before = await inner.get(key);
      const value = await inner.decrementToZero(key);
      if (before !== null && before !== String(value)) await record(key);
      return value;
    },
    async incrementBy(key, delta) {
      const value = await inner.incrementBy(key, delta);
      await record(key);
      return value;
    },
    async claimUse(key, maxUses, expiresAt, attempt) {
      const before = await inner.get(key);
      const claimed = await inner.claimUse(key, maxUses, expiresAt, attempt);
      if ((await inner.get(key)) !== before) {
        if (before === null) expiries.set(key, usesKeptUntil(expiresAt));
        await record(key);
      }
      return claimed;
    },
    async releaseUse(key, attempt, expiresAt) {
      const before = await inner.get(key);
      await inner.releaseUse(key, attempt, expiresAt);
      if (before === null) expiries.set(key, usesKeptUntil(expiresAt));
      await record(key);
    },
    usesHeld: (key) => inner.usesHeld(key),
  };
}
