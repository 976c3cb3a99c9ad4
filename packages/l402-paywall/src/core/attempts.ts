/**
 * Names the paid requests of one paywall in a shared store: a random prefix
 * and a counter, unique across instances without a random draw per request.
 * The prefix is drawn on first use: some runtimes (Workers) refuse
 * randomness at import, and a paywall may be built at import.
 */
export class AttemptNames {
  #prefix = '';
  #count = 0;

  next(): string {
    if (!this.#prefix) {
      const bytes = crypto.getRandomValues(new Uint8Array(12));
      for (const byte of bytes) this.#prefix += byte.toString(16).padStart(2, '0');
    }
    return `${this.#prefix}.${(this.#count++).toString(36)}`;
  }
}
