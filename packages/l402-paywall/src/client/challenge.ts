// Reading L402 challenges the way real servers send them: the `L402` and
// legacy `LSAT` schemes, the token as `token=`, `macaroon=` or bare
// (`L402 <macaroon>, invoice="…"`, this project's first form), several
// challenges in one WWW-Authenticate field (Headers.get() joins repeated
// fields with ", "), other schemes mixed in, unknown parameters ignored.
// The WWW-Authenticate grammar itself is read by http/authenticate.ts.
import { parseAuthenticate } from '../http/authenticate.js';

export interface L402Challenge {
  /** `L402` or `LSAT`, as the server spelled the scheme (upper-cased). */
  scheme: 'L402' | 'LSAT';
  /** The macaroon or token to send back, as given. */
  token: string;
  invoice: string;
}

/**
 * The L402 challenges of a WWW-Authenticate value, each with a token and an
 * invoice, duplicates (one challenge sent in several forms) merged.
 */
export function l402Challenges(header: string | null): L402Challenge[] {
  if (!header) return [];
  const found: L402Challenge[] = [];
  for (const raw of parseAuthenticate(header)) {
    const scheme = raw.scheme.toUpperCase();
    if (scheme !== 'L402' && scheme !== 'LSAT') continue;
    const token = raw.params.get('token') || raw.params.get('macaroon') || raw.token68;
    const invoice = raw.params.get('invoice');
    if (!token || !invoice) continue;
    const same = found.find((c) => c.token === token && c.invoice === invoice);
    // One challenge in both schemes (Aperture sends LSAT then L402): answer with L402.
    if (same) {
      if (scheme === 'L402') same.scheme = 'L402';
      continue;
    }
    found.push({ scheme, token, invoice });
  }
  return found;
}

/** The challenge in a 402's JSON body ({macaroon|token, invoice}), for clients that cannot read the header (a browser without CORS exposure). */
export function bodyChallenge(body: unknown): L402Challenge | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  const token = typeof b.macaroon === 'string' ? b.macaroon : typeof b.token === 'string' ? b.token : undefined;
  const invoice = typeof b.invoice === 'string' ? b.invoice : undefined;
  return token && invoice ? { scheme: 'L402', token, invoice } : undefined;
}
