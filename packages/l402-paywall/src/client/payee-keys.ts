// The node key each host's invoices were signed with lately: the next invoice
// from that host is checked against it (cheaper than recovering the key; the
// same result either way, since a key that does not verify is recovered).
import { setNewest } from '../util/bounded-map.js';

/** Hosts remembered at most; past it the oldest is forgotten (and its next invoice's key recovered). */
const HOSTS_MAX = 256;

export class PayeeKeys {
  readonly #byHost = new Map<string, string>();

  /** The key `host`'s last invoice was signed with, if known. */
  of(host: string): string | undefined {
    return this.#byHost.get(host);
  }

  remember(host: string, payee: string): void {
    if (this.#byHost.get(host) !== payee) setNewest(this.#byHost, host, payee, HOSTS_MAX);
  }
}
