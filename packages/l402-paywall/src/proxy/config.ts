// The proxy's configuration (`l402-paywall proxy --config l402-proxy.json`,
// or createProxy's first argument): the upstream, and the routes in the order
// they are tried. Validated with zod at start, so a mistake names its field
// and stops the proxy before it sells anything; the same schema is published
// as JSON Schema (proxy-config.schema.json) for editors and CI.
import { z } from 'zod';

/** The methods a route may name (what a Web Request can carry). */
export const PROXY_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** The usage meters a session route may name; "openai-usage" reads an OpenAI-compatible answer's usage. */
export const PROXY_METERS = ['openai-usage'] as const;

const wholeSats = z
  .int()
  .min(1)
  .max((21_000_000 * 100_000_000) / 1000, 'must be at most 2.1e12');

const PathPattern = z
  .string()
  .regex(/^\/[\x21-\x7e]*$/, 'must start with "/" and hold printable characters only (no spaces)')
  .refine((path) => !path.slice(0, -1).includes('*') && (!path.endsWith('*') || path.endsWith('/*')), {
    message: 'may end with "/*" (this path and everything under it), and hold no other "*"',
  })
  .describe('"/v1/chat/completions" (this path exactly) or "/v1/*" ("/v1" and everything under it); "/*" is every path');

const SessionTerms = z
  .strictObject({
    unitSats: wholeSats.describe('Whole satoshis per unit: a request, or with "meter" one unit the upstream reports (a token)'),
    depositUnits: z.int().min(1).max(1_000_000).optional().describe('The deposit, in units; default 20'),
    idleTimeoutSeconds: z.int().min(1).max(86_400).optional().describe('A session unused this long is closed and refunded; default 300'),
    unitType: z
      .string()
      .regex(/^[\x20-\x7e]{1,40}$/, 'must be 1 to 40 printable ASCII characters')
      .optional()
      .describe('What a unit is, shown to the client; default "request" ("token" with a meter)'),
  })
  .describe('Sells the route by the prepaid session (docs/sessions.md)');

export const ProxyRoute = z
  .strictObject({
    path: PathPattern,
    methods: z.array(z.enum(PROXY_METHODS)).min(1).optional().describe('The methods this route matches; default every method'),
    priceSats: wholeSats.optional().describe('Sells each request for this many whole satoshis'),
    session: SessionTerms.optional(),
    free: z.literal(true).optional().describe('Forwarded without payment'),
    meter: z
      .enum(PROXY_METERS)
      .optional()
      .describe('With "session": charges the units the upstream reports it used (an OpenAI-compatible usage), not one per request'),
    tokenTtlSeconds: z
      .int()
      .min(1)
      .max(30 * 86_400)
      .optional()
      .describe("The token's and invoice's lifetime; default the top-level one, else 3600"),
    uses: z.int().min(1).max(1_000_000).optional().describe('Requests one payment buys (priceSats routes); default 1; above 1 offers L402 only'),
    schemes: z
      .strictObject({ l402: z.boolean().optional(), payment: z.boolean().optional() })
      .optional()
      .describe('Which schemes a priceSats route offers; default both'),
    keepPaymentOnFailure: z
      .boolean()
      .optional()
      .describe("Payment credentials: the use stays spent when the upstream fails (draft-lightning-charge's rule); default false"),
    memo: z.string().max(120).optional().describe('The invoices\' description; default "L402 <path>"'),
  })
  .superRefine((route, ctx) => {
    const modes = (['priceSats', 'session', 'free'] as const).filter((mode) => route[mode] !== undefined);
    if (modes.length !== 1)
      ctx.addIssue({
        code: 'custom',
        path: modes.length === 0 ? [] : [modes[1]!],
        message:
          modes.length === 0
            ? 'needs one of "priceSats", "session" or "free": true'
            : `takes one of "priceSats", "session" or "free", not ${modes.join(' and ')}`,
      });
    if (route.meter !== undefined && route.session === undefined)
      ctx.addIssue({ code: 'custom', path: ['meter'], message: 'goes with "session": a meter charges units of a session' });
    if (route.session === undefined && route.priceSats === undefined)
      for (const option of ['tokenTtlSeconds', 'uses', 'schemes', 'keepPaymentOnFailure', 'memo'] as const)
        if (route[option] !== undefined) ctx.addIssue({ code: 'custom', path: [option], message: 'applies to a paid route, not a free one' });
    if (route.session !== undefined)
      for (const option of ['uses', 'schemes', 'keepPaymentOnFailure'] as const)
        if (route[option] !== undefined) ctx.addIssue({ code: 'custom', path: [option], message: 'applies to a priceSats route, not a session route' });
    if (route.uses !== undefined && route.uses > 1 && route.schemes?.payment === true)
      ctx.addIssue({ code: 'custom', path: ['schemes', 'payment'], message: 'a Payment charge opens one request: with "uses" above 1, L402 only' });
    if (route.schemes && route.schemes.l402 === false && route.schemes.payment === false)
      ctx.addIssue({ code: 'custom', path: ['schemes'], message: 'turns both schemes off: nothing could be sold' });
  })
  .describe('A route: the first whose path and method match a request sells it');

export const ProxyConfig = z
  .strictObject({
    $schema: z.string().optional().describe("This file's JSON Schema, for editors"),
    upstream: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL, such as http://127.0.0.1:8000' })
      .refine((url) => !new URL(url).search && !new URL(url).hash, 'must have no query or fragment')
      .describe('The service sold: every forwarded path is appended to its path'),
    routes: z.array(ProxyRoute).min(1).max(1000).describe('Tried in order; a request no route matches is answered 404 and never forwarded'),
    timeoutSeconds: z
      .int()
      .min(1)
      .max(3600)
      .default(30)
      .describe("How long the upstream has to answer with its status and headers (then 504); a streamed body's length is not bounded"),
    tokenTtlSeconds: z
      .int()
      .min(1)
      .max(30 * 86_400)
      .optional()
      .describe("The tokens' and invoices' lifetime; default 3600"),
    realm: z
      .string()
      .regex(/^[\x20-\x7b\x7d\x7e]{1,256}$/, 'must be 1 to 256 printable ASCII characters without "|"')
      .optional()
      .describe('The Payment challenges\' realm: your public host name; default "l402-paywall"'),
    maxBodyBytes: z
      .int()
      .min(0)
      .max(1024 * 1024 * 1024)
      .default(10 * 1024 * 1024)
      .describe('The largest request body forwarded (413 above it); a metered route reads at most this much of it'),
  })
  .describe('The configuration of `l402-paywall proxy`');

/** The configuration as written (defaults not yet filled in). */
export type ProxyConfigInput = z.input<typeof ProxyConfig>;
/** The configuration after checking, defaults filled in. */
export type ProxyConfig = z.output<typeof ProxyConfig>;
export type ProxyRoute = z.output<typeof ProxyRoute>;

/** A configuration that fails the schema: `issues` name each bad field (`routes[1].priceSats: ...`). */
export class ProxyConfigError extends Error {
  override readonly name = 'ProxyConfigError';
  constructor(readonly issues: readonly string[]) {
    super(`Invalid proxy configuration: ${issues.join('; ')}`);
  }
}

/** Checks `value` against the schema: the configuration with its defaults, or a ProxyConfigError naming each bad field. */
export function parseProxyConfig(value: unknown): ProxyConfig {
  const parsed = ProxyConfig.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new ProxyConfigError(parsed.error.issues.map((issue) => `${fieldName(issue.path)}: ${issue.message}`));
}

/** `routes[1].session.unitSats`; `(the file)` for the whole. */
function fieldName(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(the configuration)';
  return path.map((key, index) => (typeof key === 'number' ? `[${key}]` : `${index === 0 ? '' : '.'}${String(key)}`)).join('');
}

/** The JSON Schema of the configuration file, as published in the package (proxy-config.schema.json). */
export function proxyConfigJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(ProxyConfig, { io: 'input', target: 'draft-2020-12' }),
    $id: 'https://unpkg.com/l402-paywall/proxy-config.schema.json',
    title: 'l402-paywall proxy configuration',
  };
}
