// Builds the service's OpenAPI 3.1 document from the routes' contracts
// (lib/contracts/): the zod schemas the routes validate with and the answers
// they declare (z.toJSONSchema, JSON Schema 2020-12, which OpenAPI 3.1 uses),
// never restated. Every
// operation answers errors as {error, code}; paid operations carry the L402
// security scheme and their 402 challenge.
import { z } from 'zod';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type JsonSchema = Record<string, unknown>;

export interface ResponseSpec {
  description: string;
  /** JSON body; absent: no body described. */
  schema?: z.ZodType;
  /** Default application/json. */
  contentType?: string;
  /** Response headers worth naming. */
  headers?: Record<string, string>;
}

export interface OperationSpec {
  summary: string;
  description?: string;
  tags?: string[];
  /** The route's own query schema (a z.object): one parameter per key. */
  query?: z.ZodObject;
  /** Path parameters: name -> description. */
  pathParameters?: Record<string, string>;
  /** The route's own JSON body schema. */
  body?: z.ZodType;
  /** Paid with L402 or a Payment charge: adds the security requirement and the 402 challenge answer. */
  paid?: boolean;
  /** Sold by the prepaid session (the Payment scheme's intent="session"), beside the charge or alone. */
  session?: boolean;
  /** Other credentials the operation needs (names of securitySchemes). */
  security?: string[];
  /** Still answered, but superseded (an older path of a renamed route). */
  deprecated?: boolean;
  responses: Record<number, ResponseSpec>;
}

export type PathSpec = Partial<Record<Method, OperationSpec>>;

/**
 * What one route takes and answers, declared once (lib/contracts/<route>.ts):
 * the route validates its requests with the same schemas, and the document is
 * assembled from every route's contract.
 */
export interface RouteContract {
  /** OpenAPI path, `{name}` for a `[name]` segment. */
  path: string;
  methods: PathSpec;
}

export function routeContract(path: string, methods: PathSpec): RouteContract {
  return { path, methods };
}

export const ErrorBody = z
  .object({
    error: z.string().describe('What went wrong, for a person'),
    code: z
      .string()
      .regex(/^[A-Z][A-Z0-9_]*$/)
      .describe('What went wrong, for a program (UPPER_SNAKE)'),
    retryAfter: z.number().int().optional().describe('Seconds, on 429 and 503 (also in the Retry-After header)'),
  })
  .loose();

const hex64 = /^[0-9a-f]{64}$/;
export const L402Challenge = z
  .object({
    error: z.string(),
    code: z.string().describe('PAYMENT_REQUIRED, or why the credential sent was refused (TOKEN_ALREADY_USED, TOKEN_EXPIRED, …)'),
    macaroon: z.string().describe('The token to send back: Authorization: L402 <macaroon>:<preimage>'),
    invoice: z.string().describe('BOLT11 invoice to pay; its preimage is the proof of payment'),
    paymentHash: z.string().regex(hex64),
    priceSats: z.number().int().positive(),
    expiresAt: z.iso.datetime(),
    // RFC 9457 problem details, with the Payment scheme's problem types (docs/mpp.md).
    type: z.string().optional().describe('Problem type, e.g. https://paymentauth.org/problems/payment-required'),
    title: z.string().optional(),
    status: z.number().int().optional(),
    detail: z.string().optional(),
    challengeId: z.string().optional().describe('The id of the fresh Payment challenge in WWW-Authenticate'),
  })
  .loose();

const toJson = (schema: z.ZodType, io: 'input' | 'output'): JsonSchema => {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', reused: 'inline' }) as JsonSchema;
  delete json.$schema;
  return json;
};

/**
 * One way to pay an operation, as its 402 asks (the `x-payment-info` extension
 * of MPP discovery): the Payment method and intent, the amount in the
 * currency's smallest unit as a decimal string, the currency.
 */
export interface PaymentOffer {
  method: string;
  intent: string;
  amount: string;
  currency: string;
}

/** What the running service adds to the contracts: each paid path's offers (by its OpenAPI path), and the document's `x-service-info`. */
export interface DiscoveryInfo {
  offers?: Readonly<Record<string, readonly PaymentOffer[]>>;
  serviceInfo?: JsonSchema;
}

export function openApiDocument(
  info: { title: string; version: string; description: string },
  contracts: readonly RouteContract[],
  discovery: DiscoveryInfo = {},
): JsonSchema {
  const documentPaths: Record<string, JsonSchema> = {};
  for (const { path, methods } of contracts) {
    if (documentPaths[path]) throw new Error(`two contracts describe ${path}`);
    const item: JsonSchema = {};
    const offers = discovery.offers?.[path];
    for (const [method, spec] of Object.entries(methods) as [Method, OperationSpec][]) {
      item[method.toLowerCase()] = {
        ...operation(method, spec),
        // Only where the route is sold, and as its 402 asks: a client or validator finds the paid operations by it.
        ...((spec.paid || spec.session) && offers && offers.length > 0 && { 'x-payment-info': { offers } }),
      };
    }
    // route() answers HEAD wherever it answers GET: the same operation, without a body.
    if (item.get) item.head = headOf(item.get as JsonSchema);
    documentPaths[path] = item;
  }
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info,
    ...(discovery.serviceInfo && { 'x-service-info': discovery.serviceInfo }),
    paths: documentPaths,
    components: {
      schemas: { Error: toJson(ErrorBody, 'output'), L402Challenge: toJson(L402Challenge, 'output') },
      securitySchemes: {
        L402: {
          type: 'http',
          scheme: 'L402',
          description:
            'Pay per request over Lightning. Without a valid credential the answer is 402 with `WWW-Authenticate: L402 macaroon="…", invoice="…"` (also `LSAT macaroon="…", invoice="…"` and `L402 version="0", token="…", invoice="…"`, and the same facts in the JSON body). ' +
            'Pay the invoice, then send `Authorization: L402 <macaroon>:<preimage hex>`. A token buys one request; a used, expired or invalid one gets a fresh 402 challenge.',
        },
        Payment: {
          type: 'http',
          scheme: 'Payment',
          description:
            'The IETF "Payment" scheme (draft-httpauth-payment) with the Lightning charge method, for the same invoice as the L402 challenge: `WWW-Authenticate: Payment id="…", realm="…", method="lightning", intent="charge", request="…", expires="…"`. ' +
            'Pay the invoice, then send `Authorization: Payment <base64url JSON {challenge, payload: {preimage}}>`. A paid answer carries `Payment-Receipt`. One payment opens one request, whichever scheme presents it.',
        },
        login: { type: 'http', scheme: 'bearer', description: 'Dashboard login token from the LNURL-auth login (GET /api/lnurl-auth)' },
        cron: { type: 'http', scheme: 'bearer', description: 'CRON_SECRET (Vercel Cron sends it)' },
        splitSecret: { type: 'apiKey', in: 'header', name: 'x-split-secret', description: 'SPLIT_SECRET' },
      },
    },
  };
}

function operation(method: Method, spec: OperationSpec): JsonSchema {
  const parameters: JsonSchema[] = [];
  for (const [name, description] of Object.entries(spec.pathParameters ?? {}))
    parameters.push({ name, in: 'path', required: true, description, schema: { type: 'string' } });
  if (spec.query) {
    const query = toJson(spec.query, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {})) {
      if (spec.pathParameters?.[name]) continue;
      parameters.push({ name, in: 'query', required: query.required?.includes(name) ?? false, schema });
    }
  }
  const responses: Record<string, JsonSchema> = {};
  for (const [status, response] of Object.entries(spec.responses)) {
    responses[status] = {
      description: response.description,
      ...(response.headers && {
        headers: Object.fromEntries(Object.entries(response.headers).map(([name, description]) => [name, { description, schema: { type: 'string' } }])),
      }),
      ...(response.schema && { content: { [response.contentType ?? 'application/json']: { schema: toJson(response.schema, 'output') } } }),
    };
  }
  if (spec.paid || spec.session) {
    // A paid answer to a Payment credential carries its receipt.
    for (const [status, response] of Object.entries(responses)) {
      if (status.startsWith('2'))
        response.headers = {
          ...(response.headers as JsonSchema | undefined),
          'Payment-Receipt': {
            description: `Payment credentials only: base64url JSON {method: "lightning", challengeId, reference: <${spec.paid ? "payment hash, or a session's id" : "the session's id"}>, status: "success", timestamp}`,
            schema: { type: 'string' },
          },
        };
    }
    const challenges = [
      ...(spec.paid
        ? [
            'L402 challenges: `LSAT macaroon="…", invoice="…"`, `L402 macaroon="…", invoice="…"` and `L402 version="0", token="…", invoice="…"`; then the Payment challenge for the same invoice: `Payment id="…", realm="…", method="lightning", intent="charge", request="…", expires="…"`',
          ]
        : []),
      ...(spec.session
        ? [
            'the session challenge for a deposit invoice: `Payment id="…", realm="…", method="lightning", intent="session", request="…", expires="…"` (docs/sessions.md)',
          ]
        : []),
    ];
    responses['402'] = {
      description: spec.paid
        ? 'Payment required: pay the invoice and retry with Authorization: L402 <macaroon>:<preimage> or Authorization: Payment <credential>'
        : 'Payment required: pay the deposit and open a session with Authorization: Payment <credential>; a session short of balance is answered 402 with a fresh deposit to top up with',
      headers: { 'WWW-Authenticate': { description: challenges.join('; '), schema: { type: 'string' } } },
      content: { 'application/json': { schema: { $ref: '#/components/schemas/L402Challenge' } } },
    };
  }
  if (spec.query || spec.body) responses['400'] ??= errorResponse('The request is not valid (INVALID_REQUEST, INVALID_JSON, …)');
  if (method !== 'GET') responses['413'] ??= errorResponse('Body too large (BODY_TOO_LARGE)');
  responses['405'] ??= errorResponse('Method not allowed (METHOD_NOT_ALLOWED); the Allow header lists the methods');
  responses['503'] ??= {
    ...errorResponse('Temporarily unavailable or not configured; Retry-After says when to try again'),
    headers: { 'Retry-After': { schema: { type: 'string' } } },
  };
  responses.default = errorResponse('Any other error');

  const security = [...(spec.paid ? ['L402', 'Payment'] : spec.session ? ['Payment'] : []), ...(spec.security ?? [])];
  return {
    summary: spec.summary,
    ...(spec.description && { description: spec.description }),
    ...(spec.tags && { tags: spec.tags }),
    ...(spec.deprecated && { deprecated: true }),
    operationId: `${method.toLowerCase()}${spec.summary.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    ...(parameters.length > 0 && { parameters }),
    ...(spec.body && { requestBody: { required: true, content: { 'application/json': { schema: toJson(spec.body, 'input') } } } }),
    ...(security.length > 0 && { security: security.map((name) => ({ [name]: [] })) }),
    responses,
  };
}

function headOf(get: JsonSchema): JsonSchema {
  const responses = Object.fromEntries(
    Object.entries(get.responses as Record<string, JsonSchema>).map(([status, { content: _body, ...response }]) => [status, response]),
  );
  return { ...get, operationId: `head${String(get.operationId).slice(3)}`, summary: `${get.summary} (headers only)`, responses };
}

function errorResponse(description: string): JsonSchema {
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
}
