// Replay marks that survive a restart of a single local server (`npm start`,
// or one self-hosted instance without Upstash). The in-memory store forgets
// everything when the process ends, while the secret that signed the tokens
// is kept (under DATA_DIR or in L402_SECRET): without this, a used credential
// would open its route again after a restart. Every successful claim and
// release is appended to a file before the caller goes on, and replayed into
// the fresh store at start-up, so a mark lasts exactly as long as it does in
// the store: until its token has expired (plus the skew margin), after which
// no secret can verify the token anyway. The file is rewritten with only the
// live marks at each start, so it stays as small as the set of unexpired tokens.
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { KvReplayStore } from './replay.js';

interface Mark {
  uses: number;
  maxUses: number;
  /** The token's exp, unix seconds. */
  expiresAt: number;
}

const HASH = /^[0-9a-f]{64}$/;

/** `inner` (a fresh in-memory replay store) with its marks kept in `file`. */
export function journaledReplayStore(inner: KvReplayStore, file: string): KvReplayStore {
  const ready = restore(inner, file);
  const append = (line: string) => appendFileSync(file, line + '\n', { mode: 0o600 });
  return {
    async usedCount(paymentHash) {
      await ready;
      return inner.usedCount(paymentHash);
    },
    async claim(paymentHash, maxUses, expiresAt) {
      await ready;
      const claimed = await inner.claim(paymentHash, maxUses, expiresAt);
      // Written before the paid handler runs: a crash after this line cannot reopen the token.
      if (claimed && HASH.test(paymentHash)) append(`claim ${paymentHash} ${maxUses} ${expiresAt}`);
      return claimed;
    },
    async release(paymentHash) {
      await ready;
      await inner.release(paymentHash);
      if (HASH.test(paymentHash)) append(`release ${paymentHash}`);
    },
  };
}

/** Replays the file into `inner` and rewrites it with the marks still alive. */
async function restore(inner: KvReplayStore, file: string): Promise<void> {
  mkdirSync(dirname(file), { recursive: true });
  const marks = new Map<string, Mark>();
  if (existsSync(file)) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const [kind, hash, maxUses, expiresAt] = line.split(' ');
      if (!hash || !HASH.test(hash)) continue; // a torn last line from a crash
      if (kind === 'claim') {
        const mark = marks.get(hash) ?? { uses: 0, maxUses: Number(maxUses), expiresAt: Number(expiresAt) };
        if (!Number.isSafeInteger(mark.maxUses) || !Number.isFinite(mark.expiresAt)) continue;
        mark.uses = Math.min(mark.uses + 1, mark.maxUses);
        marks.set(hash, mark);
      } else if (kind === 'release') {
        const mark = marks.get(hash);
        if (mark) mark.uses = Math.max(0, mark.uses - 1);
      }
    }
  }
  const now = Date.now() / 1000;
  const lines: string[] = [];
  for (const [hash, mark] of marks) {
    // An expired token fails verification before its mark is ever looked at.
    if (mark.uses === 0 || mark.expiresAt <= now) continue;
    for (let i = 0; i < mark.uses; i++) {
      await inner.claim(hash, mark.maxUses, mark.expiresAt);
      lines.push(`claim ${hash} ${mark.maxUses} ${mark.expiresAt}`);
    }
  }
  // Written aside, then renamed over: a crash mid-write leaves the old file whole.
  writeFileSync(`${file}.tmp`, lines.map((line) => line + '\n').join(''), { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}
