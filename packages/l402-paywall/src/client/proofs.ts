// Invoices paid or being paid, by payment hash, for the whole process: the
// one place that decides whether an invoice goes to a wallet. The first call
// to meet an invoice pays it; any call meeting the same invoice meanwhile or
// later waits for that payment and uses its preimage. So an invoice is paid at
// most once, however many calls race on it. Entries leave when their invoice
// has expired (it can no longer be paid, so it can no longer be paid twice).

export interface Proof {
  preimage: string;
  /** Routing fee the wallet reported, integer msat (0 when it did not say). */
  feeMsat: number;
}

interface Entry {
  proof: Promise<Proof>;
  /** Unix seconds. */
  expiresAt: number;
}

const entries = new Map<string, Entry>();
let nextSweep = 0;

/** The payment of this hash already made or in flight, if any. */
export function existingProof(paymentHash: string): Promise<Proof> | undefined {
  return entries.get(paymentHash)?.proof;
}

/**
 * Starts the one payment of paymentHash, or joins the one under way.
 * `pay` runs only for the first caller; a payment that definitely failed is
 * forgotten (`forgetOnFailure` says which errors mean that) so a later call may try again.
 */
export function payOnce(
  paymentHash: string,
  expiresAt: number,
  pay: () => Promise<Proof>,
  forgetOnFailure: (error: unknown) => boolean,
): { proof: Promise<Proof>; first: boolean } {
  sweep();
  const existing = entries.get(paymentHash);
  if (existing) return { proof: existing.proof, first: false };
  const proof = pay();
  const entry: Entry = { proof, expiresAt };
  entries.set(paymentHash, entry);
  proof.catch((error: unknown) => {
    if (forgetOnFailure(error) && entries.get(paymentHash) === entry) entries.delete(paymentHash);
  });
  return { proof, first: true };
}

function sweep(): void {
  const now = Date.now() / 1000;
  if (now < nextSweep) return;
  nextSweep = now + 60;
  // A day past expiry: clocks differ, and an invoice is worthless by then anyway.
  for (const [hash, entry] of entries) if (entry.expiresAt + 86_400 < now) entries.delete(hash);
}
