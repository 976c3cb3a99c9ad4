// Right to erasure (POST /api/delete-data): once a wallet has signed, every
// payment record of the addresses linked to its key, the links and the
// logins (auth_sessions) go, in one transaction. The split ledger (splits, payouts) stays:
// it records money the service still owes or has paid to owners.
import type { Database } from '../../db/types.js';

export interface ErasureCounts {
  payments: number;
  links: number;
  /** Dashboard logins ended: `sessions` on the wire and in the erasures table, their first name. */
  sessions: number;
}

/** Deletes what belongs to `pubkey` and records that an erasure happened, without saying whose. */
export async function eraseKey(db: Database, pubkey: string): Promise<ErasureCounts> {
  return db.transaction(async (tx) => {
    const count = async (sql: string) =>
      Number((await tx.query<{ n: number }>(`WITH gone AS (${sql} RETURNING 1) SELECT count(*)::int AS n FROM gone`, [pubkey]))[0]!.n);
    // Payments first: they are found through the links deleted next.
    const payments = await count('DELETE FROM payments WHERE owner_address IN (SELECT address FROM address_links WHERE pubkey = $1)');
    // The roll-up keeps emptied cells, and an empty cell still says on which days an address was paid.
    await tx.query(
      'DELETE FROM stats_daily WHERE owner_address IN (SELECT address FROM address_links WHERE pubkey = $1) AND payments = 0 AND sats = 0 AND fee_msat = 0',
      [pubkey],
    );
    const links = await count('DELETE FROM address_links WHERE pubkey = $1');
    const sessions = await count('DELETE FROM auth_sessions WHERE pubkey = $1');
    await tx.query('INSERT INTO erasures (payments, links, sessions) VALUES ($1, $2, $3)', [payments, links, sessions]);
    return { payments, links, sessions };
  });
}
