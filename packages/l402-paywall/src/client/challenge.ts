// Reading L402 challenges the way real servers send them: the `L402` and
// legacy `LSAT` schemes, the token as `token=`, `macaroon=` or bare
// (`L402 <macaroon>, invoice="…"`, this project's first form), several
// challenges in one WWW-Authenticate field (Headers.get() joins repeated
// fields with ", "), other schemes mixed in, unknown parameters ignored.
// The grammar is RFC 9110's (auth-scheme, token68 or auth-params, quoted
// strings with backslash escapes), widened for the bare token followed by
// parameters, which that grammar does not allow but servers send.

export interface L402Challenge {
  /** `L402` or `LSAT`, as the server spelled the scheme (upper-cased). */
  scheme: 'L402' | 'LSAT';
  /** The macaroon or token to send back, as given. */
  token: string;
  invoice: string;
}

interface RawChallenge {
  scheme: string;
  token68?: string;
  params: Map<string, string>;
}

const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;
const TOKEN68_CHAR = /[A-Za-z0-9\-._~+/]/;

/** Every auth challenge in a WWW-Authenticate value, in order; malformed parts are skipped, never thrown. */
export function parseAuthenticate(header: string): RawChallenge[] {
  const challenges: RawChallenge[] = [];
  let i = 0;
  const n = header.length;
  const skipSpace = () => {
    while (i < n && (header[i] === ' ' || header[i] === '\t')) i++;
  };
  const readWhile = (re: RegExp) => {
    const start = i;
    while (i < n && re.test(header[i]!)) i++;
    return header.slice(start, i);
  };
  const readQuoted = () => {
    let value = '';
    i++; // opening quote
    while (i < n && header[i] !== '"') {
      if (header[i] === '\\' && i + 1 < n) i++;
      value += header[i++];
    }
    i++; // closing quote (or end)
    return value;
  };
  /** Skips to just after the next top-level comma (or to the end). */
  const skipItem = () => {
    while (i < n && header[i] !== ',') {
      if (header[i] === '"') readQuoted();
      else i++;
    }
    if (i < n) i++;
  };

  let current: RawChallenge | undefined;
  while (i < n) {
    skipSpace();
    if (header[i] === ',') {
      i++;
      continue;
    }
    const start = i;
    const word = readWhile(TCHAR);
    if (!word) {
      skipItem();
      continue;
    }
    skipSpace();
    if (header[i] === '=' && current) {
      // name=value: a parameter of the current challenge (unless it is a token68's padding, handled below).
      i++;
      skipSpace();
      const value = header[i] === '"' ? readQuoted() : readWhile(/[^,\s]/);
      const name = word.toLowerCase();
      if (!current.params.has(name)) current.params.set(name, value);
      skipSpace();
      if (i < n && header[i] !== ',') skipItem();
      continue;
    }
    // A new challenge: the scheme, then a token68 or parameters.
    current = { scheme: word, params: new Map() };
    challenges.push(current);
    if (i === start + word.length) continue; // scheme directly followed by a comma or the end
    const token68Start = i;
    const token68 = readWhile(TOKEN68_CHAR);
    if (!token68) continue;
    let padding = '';
    while (header[i] === '=') padding += header[i++];
    skipSpace();
    if (i >= n || header[i] === ',') {
      current.token68 = token68 + padding;
      continue;
    }
    // Not a token68 after all: the first parameter's name. Read it again as one.
    i = token68Start;
  }
  return challenges;
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
