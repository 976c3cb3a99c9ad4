// The client's Accept-Payment header (the MPP core draft): which Payment
// challenges (method/intent) it takes, and how much it prefers each:
//
//   Accept-Payment: lightning/charge, lightning/session;q=0.5, */*;q=0
//
// A range is `method/intent`, either part `*`; `q` is an HTTP qvalue (0 to 1,
// at most three decimals), 1 when absent. An offer's weight is that of the
// most specific range matching it (method and intent both named beats one
// wildcard beats two; among equals the higher q, then the earlier). q=0, or no
// range matching, refuses the offer. A malformed element is ignored, the
// others kept: a header with none left is no header at all.

/** One range of an Accept-Payment header. */
export interface PaymentRange {
  readonly method: string;
  readonly intent: string;
  /** 0 to 1, thousandths. */
  readonly q: number;
  /** How many of method and intent are named (not `*`): the most specific range decides. */
  readonly specificity: number;
}

/** What a Payment challenge is for, as Accept-Payment names it. */
export interface PaymentKind {
  readonly method: string;
  readonly intent: string;
}

/** The longest header read: a client has a handful of ranges; more is not a preference but an attack on the parser. */
const MAX_HEADER_LENGTH = 1024;
const MAX_RANGES = 32;
const TOKEN = /^(?:\*|[a-z0-9][a-z0-9-]{0,63})$/;
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

/** The header's well-formed ranges, in its order; undefined when it is absent or has none. */
export function parseAcceptPayment(header: string | null): PaymentRange[] | undefined {
  if (header === null || header.length > MAX_HEADER_LENGTH) return undefined;
  const ranges: PaymentRange[] = [];
  for (const element of header.split(',')) {
    const range = parseRange(element);
    if (range) ranges.push(range);
    if (ranges.length === MAX_RANGES) break;
  }
  return ranges.length > 0 ? ranges : undefined;
}

function parseRange(element: string): PaymentRange | undefined {
  const [kind, ...parameters] = element.split(';');
  const slash = kind!.indexOf('/');
  if (slash < 0) return undefined;
  const method = kind!.slice(0, slash).trim().toLowerCase();
  const intent = kind!
    .slice(slash + 1)
    .trim()
    .toLowerCase();
  if (!TOKEN.test(method) || !TOKEN.test(intent)) return undefined;
  let q = 1;
  for (const parameter of parameters) {
    const equals = parameter.indexOf('=');
    if (equals < 0) return undefined;
    const name = parameter.slice(0, equals).trim().toLowerCase();
    const value = parameter.slice(equals + 1).trim();
    // Other parameters are extensions this server does not know: they change nothing.
    if (name !== 'q') continue;
    if (!QVALUE.test(value)) return undefined;
    q = Math.round(Number(value) * 1000) / 1000;
  }
  return { method, intent, q, specificity: Number(method !== '*') + Number(intent !== '*') };
}

/** The weight of a challenge of `kind` under `ranges`: that of the most specific matching range (0 when none matches). */
export function weightOf(kind: PaymentKind, ranges: readonly PaymentRange[]): number {
  let best: PaymentRange | undefined;
  for (const range of ranges) {
    if ((range.method !== '*' && range.method !== kind.method) || (range.intent !== '*' && range.intent !== kind.intent)) continue;
    // Strictly better only: among equally specific ranges of equal q, the first one stands.
    if (!best || range.specificity > best.specificity || (range.specificity === best.specificity && range.q > best.q)) best = range;
  }
  return best?.q ?? 0;
}

/**
 * The items a client with these ranges takes, most preferred first: those it
 * refuses (weight 0) left out, equal weights in the server's order.
 */
export function rankByPreference<T>(items: readonly T[], kindOf: (item: T) => PaymentKind, ranges: readonly PaymentRange[]): T[] {
  return items
    .map((item, index) => ({ item, index, weight: weightOf(kindOf(item), ranges) }))
    .filter((entry) => entry.weight > 0)
    .sort((a, b) => b.weight - a.weight || a.index - b.index)
    .map((entry) => entry.item);
}
