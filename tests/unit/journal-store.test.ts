// The dev node's file-backed store (lib/store/journal.ts): what was written
// through it is there again after a "restart" (a new store on the same file).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../lib/store/memory.js';
import { createJournaledStore } from '../../lib/store/journal.js';

let dir = '';
const file = () => join(dir, 'ledger.jsonl');
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('createJournaledStore', () => {
  it('brings back values, counters, deletions and expiries after a restart, and compacts the file', async () => {
    dir = mkdtempSync(join(tmpdir(), 'journal-'));
    const first = createJournaledStore(file());
    await first.set('kept', 'a');
    await first.set('kept', 'b');
    await first.set('gone', 'x');
    await first.del('gone');
    await first.set('short', 'y', { ttlMs: 1 });
    await first.set('long', 'z', { ttlMs: 3_600_000 });
    expect(await first.set('long', 'other', { ifAbsent: true })).toBe(false);
    await first.incrementBy('balance', 5000);
    await first.incrementBy('balance', -1500);
    await new Promise((done) => setTimeout(done, 5)); // past 'short''s expiry

    const second = createJournaledStore(file());
    expect(await second.get('kept')).toBe('b');
    expect(await second.get('gone')).toBeNull();
    expect(await second.get('short')).toBeNull();
    expect(await second.get('long')).toBe('z');
    expect(await second.get('balance')).toBe('3500');
    // Compacted: one line per live key.
    expect(
      readFileSync(file(), 'utf8')
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { k: string }).k)
        .sort(),
    ).toEqual(['balance', 'kept', 'long']);
  });

  it('writes into the store it wraps, and journals only what goes through it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'journal-'));
    const shared = createMemoryStore();
    const journaled = createJournaledStore(file(), shared);
    await journaled.set('through', '1');
    await shared.set('beside', '2');
    expect(await shared.get('through')).toBe('1');
    expect(await journaled.get('beside')).toBe('2');
    const restarted = createJournaledStore(file(), createMemoryStore());
    expect(await restarted.get('through')).toBe('1');
    expect(await restarted.get('beside')).toBeNull();
  });
});
