// Invoices paid or being paid, by payment hash: for one wallet, the one place
// that decides whether an invoice goes to it. The first call to meet an
// invoice pays it; any call meeting the same invoice meanwhile or later waits
// for that payment and uses its preimage. So the wallet pays an invoice at
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

/** How often, at most, expired entries are looked for (seconds). */
const SWEEP_EVERY_SECONDS = 60;
/** A day past expiry: clocks differ, and an invoice is worthless by then anyway. */
const KEEP_PAST_EXPIRY_SECONDS = 86_400;

export class PaidInvoices {
  readonly #entries = new Map<string, Entry>();
  /** Unix seconds before which no sweep runs. */
  #nextSweep = 0;

  /**
   * Starts the one payment of paymentHash, or joins the one under way.
   * `pay` runs only for the first caller; a payment that definitely failed is
   * forgotten (`forgetOnFailure` says which errors mean that) so a later call may try again.
   */
  payOnce(
    paymentHash: string,
    expiresAt: number,
    pay: () => Promise<Proof>,
    forgetOnFailure: (error: unknown) => boolean,
  ): { proof: Promise<Proof>; first: boolean } {
    this.#sweep();
    const existing = this.#entries.get(paymentHash);
    if (existing) return { proof: existing.proof, first: false };
    const proof = pay();
    const entry: Entry = { proof, expiresAt };
    this.#entries.set(paymentHash, entry);
    proof.catch((error: unknown) => {
      if (forgetOnFailure(error) && this.#entries.get(paymentHash) === entry) this.#entries.delete(paymentHash);
    });
    return { proof, first: true };
  }

  #sweep(): void {
    const now = Date.now() / 1000;
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + SWEEP_EVERY_SECONDS;
    for (const [hash, entry] of this.#entries) if (entry.expiresAt + KEEP_PAST_EXPIRY_SECONDS < now) this.#entries.delete(hash);
  }
}
