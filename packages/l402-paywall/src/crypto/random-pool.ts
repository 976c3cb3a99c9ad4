// Random bytes for the hot paths (a macaroon's token id per 402, a dev node's
// secrets per invoice): crypto.getRandomValues costs
// microseconds per call in Node whatever its size, so they are drawn a
// kilobyte at a time. Each byte is handed out once and wiped from the pool
// as it goes. Drawn on first use, never at import: some runtimes (Workers)
// refuse randomness there. A pool belongs to the object that draws from it.

const POOL_BYTES = 1024;

export class RandomPool {
  #pool = new Uint8Array(0);
  #at = 0;

  /** `count` fresh random bytes, the caller's own. */
  take(count: number): Uint8Array {
    if (this.#at + count > this.#pool.length) {
      this.#pool = crypto.getRandomValues(new Uint8Array(Math.max(POOL_BYTES, count)));
      this.#at = 0;
    }
    const bytes = this.#pool.slice(this.#at, this.#at + count);
    this.#pool.fill(0, this.#at, this.#at + count);
    this.#at += count;
    return bytes;
  }
}
