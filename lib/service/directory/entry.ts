// What a directory entry is (POST /api/register, GET /api/apis.json): the
// fields a registration sends, checked and normalised, and what the listing shows.
import { z } from 'zod';
import { LightningAddress } from 'l402-paywall/lightning';

const PROOF_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export const CATEGORIES = ['data', 'ai', 'finance', 'weather', 'compute', 'storage', 'other'] as const;
export type Category = (typeof CATEGORIES)[number];

export const MAX_URL_LENGTH = 2048;
/** Characters are Unicode code points: "😀" is one. */
export const MAX_NAME_CHARS = 100;
export const MAX_DESCRIPTION_CHARS = 500;
/** 1 BTC per call: anything above is a typo (msat for sat), and it fits Postgres' integer. */
export const MAX_PRICE_SATS = 100_000_000;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// NUL cannot be stored in Postgres text at all; the other controls have no place
// in a one-line name. A description may hold tabs and line breaks.
const CONTROL_IN_LINE = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

const requiredString = (field: string, what: string) =>
  z.string({ error: (issue) => (issue.input === undefined ? `${field} is required (${what})` : `${field} must be a string (${what})`) });

/** Text as people typed it, minus surrounding whitespace; stored and listed exactly so. */
function text(field: string, maxChars: number, multiline: boolean, what: string) {
  return requiredString(field, what)
    .trim()
    .min(multiline ? 0 : 1, `${field} must not be empty`)
    .refine((s) => !LONE_SURROGATE.test(s), `${field} must be valid Unicode text (it contains a lone surrogate)`)
    .refine((s) => !(multiline ? CONTROL_IN_TEXT : CONTROL_IN_LINE).test(s), `${field} must not contain control characters`)
    .refine((s) => codePoints(s) <= maxChars, `${field} must be at most ${maxChars} characters`);
}

/**
 * An absolute http(s) URL in WHATWG canonical form without its fragment, so
 * `HTTPS://Example.com:443/a/../api#x` and `https://example.com/api` are one entry.
 */
export const ApiUrl = requiredString('url', `an absolute http(s) URL of at most ${MAX_URL_LENGTH} characters`)
  .trim()
  .max(MAX_URL_LENGTH, `url must be at most ${MAX_URL_LENGTH} characters`)
  .refine((s) => !LONE_SURROGATE.test(s), 'url must be valid Unicode text (it contains a lone surrogate)')
  .transform((raw, ctx) => {
    const fail = (message: string) => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return fail('url must be an absolute http(s) URL, like https://api.example.com/v1/price');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return fail('url must use http or https');
    // The directory is public: never publish credentials someone pasted by mistake.
    if (url.username || url.password) return fail('url must not contain a user name or password');
    url.hash = '';
    const canonical = url.href;
    if (canonical.length > MAX_URL_LENGTH) return fail(`url must be at most ${MAX_URL_LENGTH} characters once normalised`);
    return canonical;
  });

export const CategorySchema = z.enum(CATEGORIES, { error: `category must be one of ${CATEGORIES.join(', ')}` });

/** POST /api/register: a directory entry. Unknown fields are refused (a typo must not pass silently). */
export const Registration = z.strictObject({
  url: ApiUrl,
  name: text('name', MAX_NAME_CHARS, false, `1-${MAX_NAME_CHARS} characters`),
  price_sats: z
    .number({
      error: (issue) =>
        issue.input === undefined ? 'price_sats is required (satoshis per call, a whole number >= 1)' : 'price_sats must be a number (satoshis per call)',
    })
    .int('price_sats must be a whole number of satoshis')
    .min(1, 'price_sats must be at least 1')
    .max(MAX_PRICE_SATS, `price_sats must be at most ${MAX_PRICE_SATS}`),
  lightning_address: requiredString('lightning_address', 'a Lightning Address like name@example.com').pipe(LightningAddress),
  // Absent, null and "" all mean "no description"; a registration replaces the whole entry.
  description: text('description', MAX_DESCRIPTION_CHARS, true, `at most ${MAX_DESCRIPTION_CHARS} characters`)
    .nullish()
    .transform((s) => (s ? s : null)),
  category: CategorySchema.nullish().transform((c) => c ?? null),
  /** 32 bytes in base64url chosen by the registrant: the origin of `url` must answer it (registration.ts). */
  proof_token: z
    .string({ error: 'proof_token must be a string' })
    .regex(PROOF_TOKEN, 'proof_token must be 43 base64url characters (32 random bytes)')
    .optional(),
});
export type Registration = z.infer<typeof Registration>;

export const ApisQuery = z.object({ category: CategorySchema.optional() });

export interface DirectoryEntry {
  url: string;
  name: string;
  description: string | null;
  price_sats: number;
  category: Category | null;
  created_at: string;
  /** Only on the service's own demo (demo-entry.ts): the spec's fields, plus this mark. */
  demo?: true;
}

export interface DirectoryListing {
  version: '1';
  count: number;
  apis: DirectoryEntry[];
}
