// Reading WWW-Authenticate values the way real servers send them, for both
// sides: the client finds L402 and Payment challenges with it, the server
// side reads Payment challenges (src/schemes/payment/) with it. The grammar is RFC 9110's
// (auth-scheme, token68 or auth-params, quoted strings with backslash
// escapes), widened for a bare token followed by parameters
// (`L402 <macaroon>, invoice="…"`), which that grammar does not allow but
// servers send. Several challenges may share one value (Headers.get() joins
// repeated fields with ", "); malformed parts are skipped, never thrown.

/** One auth challenge as written: its scheme, and a token68 or its parameters (names lower-cased, the first of a repeated one kept). */
export interface RawChallenge {
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
