// Registering in the directory from tests that are not about ownership: a
// dashboard session whose key has the entry's address linked (what POST
// /api/links would do after its 1-sat proof), which is one of the two proofs
// POST /api/register accepts.
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { createLogin } from '../../lib/service/accounts/auth.js';
import type { ServiceContext } from '../../lib/service/context.js';

/** Headers that prove control of `address` to POST /api/register on this service. */
export async function addressProofHeaders(ctx: ServiceContext, address: string): Promise<Record<string, string>> {
  const pubkey = bytesToHex(secp256k1.getPublicKey(randomBytes(32), true));
  const { token } = await createLogin(ctx, pubkey);
  const db = await ctx.database();
  await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2) ON CONFLICT DO NOTHING', [pubkey, address.toLowerCase()]);
  return { authorization: `Bearer ${token}` };
}
