// GET /api/openapi.json: the service's REST interface as OpenAPI 3.1, for
// agents and their tools. Request schemas are the routes' own zod schemas
// (imported from each route, so there is one copy); answers are described
// here. Built once per instance. A test checks that every api/ file's
// methods are in it and that the running service's answers validate.
import { z } from 'zod';
import { openApiDocument, type PathSpec } from '../lib/http/openapi.js';
import { route } from '../lib/http/route.js';
import { PollQuery, WalletQuery } from '../lib/service/accounts/lnurl-auth.js';
import { ApisQuery, Registration } from '../lib/service/directory/entry.js';
import { Query as PreimageQuery } from './demo/preimage.js';
import { Query as DevInboxQuery } from './dev/inbox.js';
import { Body as DevLoginBody } from './dev/login.js';
import { Body as DevPayBody } from './dev/pay.js';
import { Body as ProActivationBody, Query as ProOfferQuery } from './dev-token.js';
import { Body as InvoiceBody } from './invoice.js';
import { schemas as linkSchemas } from './links.js';
import { Query as LnurlpQuery } from './lnurlp/[username].js';
import { Query as ProCheckQuery } from './pro-check.js';
import { Body as SplitBody } from './split.js';
import { Query as StatsQuery } from './stats.js';
import { Body as VerifyBody } from './verify.js';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const isoTime = z.iso.datetime();
const loose = (shape: z.ZodRawShape) => z.object(shape).loose();
const LnurlAuthChallenge = loose({ k1: hex64, lnurl: z.string(), expiresAt: isoTime, pollToken: z.string(), qr: z.string() });
const Pending = loose({ status: z.literal('pending'), expiresAt: isoTime });
const CATEGORY = z.enum(['data', 'ai', 'finance', 'weather', 'compute', 'storage', 'other']);
const NO_CACHE = { 'Cache-Control': 'no-store' };

const PATHS: Record<string, PathSpec> = {
  '/api/demo': {
    GET: {
      summary: 'How the demo works',
      tags: ['demo'],
      responses: {
        200: {
          description: 'The demo endpoints and the steps to pay',
          schema: loose({
            description: z.string(),
            endpoints: z.array(loose({ method: z.string(), path: z.string(), priceSats: z.number() })),
            steps: z.array(z.string()),
          }),
        },
      },
    },
  },
  '/api/demo/btc-price': {
    GET: {
      summary: 'Live BTC price (paid)',
      description: 'Costs DEMO_PRICE_SATS (1 by default). `source` names where the price came from (`simulated` offline).',
      tags: ['demo'],
      paid: true,
      responses: { 200: { description: 'The price', headers: NO_CACHE, schema: loose({ usd: z.number(), source: z.string(), fetchedAt: isoTime }) } },
    },
  },
  '/api/demo/preimage': {
    GET: {
      summary: 'Preimage of a paid demo invoice',
      tags: ['demo'],
      query: PreimageQuery,
      responses: {
        200: { description: 'Paid: the preimage', schema: loose({ preimage: hex64, paymentHash: hex64 }) },
        202: {
          description: 'Not paid yet; poll again',
          headers: { 'Retry-After': 'seconds' },
          schema: loose({ status: z.literal('pending'), paymentHash: hex64 }),
        },
      },
    },
  },
  '/api/dev/pay': {
    POST: {
      summary: 'Dev wallet: pay a dev-node invoice',
      description: 'Only with the embedded dev node outside production (404 otherwise). Fake money.',
      tags: ['demo'],
      body: DevPayBody,
      responses: { 200: { description: 'Paid', schema: loose({ preimage: hex64, paymentHash: hex64, amountMsat: z.number().int().positive() }) } },
    },
  },
  '/api/dev/inbox': {
    GET: {
      summary: "Dev node: what this server's own Lightning Addresses received",
      description: 'Only with the embedded dev node outside production (404 otherwise): payouts and link codes sent to the local addresses, comments included.',
      tags: ['demo'],
      query: DevInboxQuery,
      responses: {
        200: {
          description: 'Received payments',
          schema: loose({
            address: z.string(),
            received: z.array(
              loose({
                paymentHash: hex64,
                amountMsat: z.number().int(),
                comment: z.string().nullable().optional(),
                createdAt: z.union([z.string(), z.number()]),
              }),
            ),
          }),
        },
      },
    },
  },
  '/api/dev/login': {
    POST: {
      summary: 'Dev wallet: sign a dashboard login challenge',
      description:
        'Only with the embedded dev node outside production (404 otherwise). Signs the LNURL-auth login k1 with a development key, as a wallet would; the page then polls for its session.',
      tags: ['demo'],
      body: DevLoginBody,
      responses: {
        200: { description: 'Signed and accepted', schema: loose({ status: z.literal('OK'), pubkey: z.string() }) },
        400: { description: 'LOGIN_REFUSED (the callback refused it) or INVALID_REQUEST', schema: loose({ error: z.string(), code: z.string() }) },
      },
    },
  },
  '/api/invoice': {
    POST: {
      summary: 'Create an invoice and its token',
      description: 'With ownerAddress (managed mode) the payment is split 99.7% to the owner. 429 RATE_LIMITED above the per-IP limit.',
      tags: ['payments'],
      body: InvoiceBody,
      responses: {
        200: { description: 'The invoice', schema: loose({ paymentRequest: z.string(), paymentHash: hex64, macaroon: z.string(), expiresAt: isoTime }) },
      },
    },
  },
  '/api/verify': {
    POST: {
      summary: 'Check a credential',
      description: 'token is "<macaroon>:<preimage>", a whole "L402 …" header value or a whole "Payment …" one; consume: true uses it up.',
      tags: ['payments'],
      body: VerifyBody,
      responses: {
        200: {
          description: 'Valid or not, and why',
          schema: z.union([
            loose({ valid: z.literal(true), paymentHash: hex64, expiresAt: isoTime }),
            loose({ valid: z.literal(false), error: z.string(), code: z.string() }),
          ]),
        },
      },
    },
  },
  '/api/apis.json': {
    GET: {
      summary: 'Directory of paid APIs',
      tags: ['directory'],
      query: ApisQuery,
      responses: {
        200: {
          description: 'Newest first; cached up to 60 s',
          schema: loose({
            version: z.literal('1'),
            count: z.number().int().nonnegative(),
            apis: z.array(
              loose({
                url: z.string(),
                name: z.string(),
                description: z.string().nullable(),
                price_sats: z.number().int().positive(),
                category: CATEGORY.nullable(),
                created_at: isoTime,
                demo: z.literal(true).optional().describe("only on the service's own demo"),
              }),
            ),
          }),
        },
      },
    },
  },
  '/api/register': {
    POST: {
      summary: 'Add or update a directory entry',
      tags: ['directory'],
      body: Registration,
      responses: { 200: { description: 'Registered', schema: loose({ ok: z.literal(true), id: z.string() }) } },
    },
  },
  '/api/dev-token': {
    GET: {
      summary: 'Offer 30 days of Pro',
      tags: ['pro'],
      query: ProOfferQuery,
      responses: {
        200: {
          description: 'An invoice and the token it unlocks',
          schema: loose({ priceSats: z.number().int().positive(), invoice: z.string(), macaroon: z.string(), paymentHash: hex64, expiresAt: isoTime }),
        },
      },
    },
    POST: {
      summary: 'Activate Pro with a paid token',
      tags: ['pro'],
      body: ProActivationBody,
      responses: { 200: { description: 'Active', schema: loose({ access: z.literal(true), expiresAt: isoTime }) } },
    },
  },
  '/api/pro-check': {
    GET: {
      summary: 'Whether an address has Pro',
      tags: ['pro'],
      query: ProCheckQuery,
      responses: { 200: { description: 'Status', schema: loose({ active: z.boolean(), expiresAt: isoTime.optional() }) } },
    },
  },
  '/api/provider-webhook': {
    POST: {
      summary: 'Lightning backend webhook',
      description: 'For the configured Lightning backend only; its signature is checked over the raw body.',
      tags: ['managed'],
      responses: {
        200: { description: 'Handled', schema: loose({ ok: z.literal(true) }) },
        401: { description: 'WEBHOOK_REJECTED', schema: loose({ error: z.string(), code: z.string() }) },
      },
    },
  },
  '/api/split': {
    POST: {
      summary: 'Split a payment by hand (recovery)',
      tags: ['managed'],
      body: SplitBody,
      security: ['splitSecret'],
      responses: {
        200: {
          description: "Split; skipped: true when the owner's shares accrue below the payout minimum",
          schema: loose({ ok: z.literal(true), ownerSats: z.number().int().nonnegative(), ownerMsat: z.number().int().nonnegative() }),
        },
      },
    },
  },
  '/api/cron/payouts': {
    GET: {
      summary: 'Reconcile managed invoices and retry payouts',
      tags: ['operations'],
      security: ['cron'],
      responses: { 200: { description: 'Done', schema: loose({ reconciled: z.unknown(), payouts: z.unknown() }) } },
    },
  },
  '/api/cron/flush-payments': {
    GET: {
      summary: 'Write the payments kept in the outbox',
      tags: ['operations'],
      security: ['cron'],
      responses: { 200: { description: 'Done', schema: loose({ written: z.number().int(), pending: z.number().int() }) } },
    },
  },
  '/api/health': {
    GET: {
      summary: 'Health of the backend, store and database',
      description:
        'Anyone: `ok` and up or down per dependency (`provider`, `store`, `database`), plus `problems` and `missing` on a deployment that lacks settings. With an admin session (Bearer): which backend, store and database, latencies, errors and audit-event delivery; 403 ADMIN_REQUIRED for other keys. Probes are kept 10 s; HEALTH_RATE_LIMIT_PER_MINUTE per client IP (429).',
      tags: ['operations'],
      responses: {
        200: { description: 'Everything answers', schema: loose({ ok: z.boolean(), checkedAt: isoTime }) },
        503: {
          description: 'Something does not answer, or production settings are missing',
          headers: { 'Retry-After': 'seconds' },
          schema: loose({ ok: z.literal(false), checkedAt: isoTime }),
        },
      },
    },
  },
  '/api/lnurl-auth': {
    GET: {
      summary: 'LNURL-auth login (LUD-04)',
      description: 'Three callers: no query gives a challenge; the wallet calls back with ?k1&sig&key; the page polls with ?k1&pollToken.',
      tags: ['dashboard'],
      query: z.object({ ...PollQuery.partial().shape, ...WalletQuery.partial().shape }),
      responses: {
        200: {
          description: "A challenge, the wallet's LUD-04 answer, or the session once logged in",
          schema: z.union([LnurlAuthChallenge, loose({ status: z.enum(['OK', 'ERROR', 'ok']) })]),
        },
        202: { description: 'Not signed yet', schema: Pending },
      },
    },
  },
  '/api/session': {
    GET: {
      summary: 'The current dashboard session',
      tags: ['dashboard'],
      security: ['session'],
      responses: {
        200: { description: 'Session', schema: loose({ pubkey: z.string(), admin: z.boolean(), addresses: z.array(z.string()), expiresAt: isoTime }) },
      },
    },
    DELETE: {
      summary: 'Log out (?all=1: every session of the key)',
      tags: ['dashboard'],
      security: ['session'],
      query: z.object({ all: z.enum(['1', 'true', '0', 'false']).optional() }),
      responses: { 200: { description: 'Revoked', schema: loose({ revoked: z.number().int() }) } },
    },
  },
  '/api/links': {
    GET: {
      summary: 'Lightning Addresses linked to the session',
      tags: ['dashboard'],
      security: ['session'],
      responses: { 200: { description: 'Addresses', schema: loose({ addresses: z.array(z.string()) }) } },
    },
    POST: {
      summary: 'Link a Lightning Address (a 1-sat code, then the code)',
      tags: ['dashboard'],
      security: ['session'],
      body: linkSchemas.production.link,
      responses: { 200: { description: 'Code sent, or linked', schema: loose({ address: z.string(), status: z.enum(['code-sent', 'linked']) }) } },
    },
    DELETE: {
      summary: 'Unlink a Lightning Address',
      tags: ['dashboard'],
      security: ['session'],
      body: linkSchemas.production.unlink,
      responses: { 200: { description: 'Removed', schema: loose({ address: z.string(), removed: z.boolean() }) } },
    },
  },
  '/api/stats': {
    GET: {
      summary: 'Paid-call statistics',
      tags: ['dashboard'],
      security: ['session'],
      query: StatsQuery,
      responses: {
        200: { description: 'Statistics (JSON), or CSV with format=csv (Pro)', schema: z.object({}).loose() },
        403: { description: 'PRO_REQUIRED for CSV', schema: loose({ error: z.string(), code: z.string() }) },
      },
    },
  },
  '/api/delete-data': {
    POST: {
      summary: 'Start erasing your data (LNURL-auth)',
      tags: ['dashboard'],
      responses: { 200: { description: 'An LNURL-auth challenge to sign', schema: LnurlAuthChallenge } },
    },
    GET: {
      summary: 'Collect the erasure once signed',
      tags: ['dashboard'],
      query: PollQuery,
      responses: {
        200: {
          description: 'Deleted',
          schema: loose({ status: z.literal('ok'), deleted: loose({ payments: z.number().int(), links: z.number().int(), sessions: z.number().int() }) }),
        },
        202: { description: 'Not signed yet', schema: Pending },
      },
    },
  },
  '/api/lnurlp/{username}': {
    GET: {
      summary: "The service's Lightning Addresses (LUD-06/LUD-16)",
      description: 'Also at /.well-known/lnurlp/{username}. Errors are {status: "ERROR", reason, error, code}.',
      tags: ['managed'],
      pathParameters: { username: 'One of LNURLP_USERNAMES' },
      query: LnurlpQuery,
      responses: {
        200: {
          description: 'A payRequest, or with amount the callback {pr, routes}',
          schema: z.union([
            loose({ tag: z.literal('payRequest'), callback: z.string(), minSendable: z.number().int(), maxSendable: z.number().int(), metadata: z.string() }),
            loose({ pr: z.string(), routes: z.array(z.unknown()) }),
          ]),
        },
      },
    },
  },
  '/api/openapi.json': {
    GET: {
      summary: 'This document',
      tags: ['operations'],
      responses: { 200: { description: 'OpenAPI 3.1', schema: loose({ openapi: z.string(), paths: z.record(z.string(), z.unknown()) }) } },
    },
  },
};

let document: string | undefined;

export default route({
  GET() {
    document ??= JSON.stringify(
      openApiDocument(
        {
          title: 'L402 paywall service',
          version: '1',
          description:
            'Pay-per-request HTTP APIs on the Bitcoin Lightning Network: invoices, token verification, a directory of paid APIs for agents (GET /api/apis.json), Pro, managed mode, a live demo. ' +
            'Errors are {error, code} with a 4xx or 503 (Retry-After on 429 and 503). Paid routes answer 402 with an L402 challenge and a Payment challenge for the same invoice (see the L402 and Payment security schemes).',
        },
        PATHS,
      ),
    );
    return new Response(document, { headers: { 'Content-Type': 'application/json', 'Cache-Control': 'public, max-age=300' } });
  },
});
