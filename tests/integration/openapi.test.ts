// GET /api/openapi.json: every api/ file's methods are described, and the
// running service's real answers (success, 402 challenge, errors) validate
// against the document with a JSON Schema 2020-12 validator (ajv).
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import { useDevServer } from '../support/server.js';
import { addressProofHeaders } from '../support/directory.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const API_DIR = fileURLToPath(new URL('../../api/', import.meta.url));
const server = useDevServer();

interface Document {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }>; security?: unknown[] }>>;
  components: { securitySchemes: Record<string, { type: string; scheme?: string }> };
}
let doc: Document;
let ajv: Ajv2020;

/** api/lnurlp/[username].ts -> /api/lnurlp/{username}; api/demo/index.ts -> /api/demo. */
function apiFiles(dir = API_DIR): { file: string; path: string; example: string }[] {
  const found: { file: string; path: string; example: string }[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) found.push(...apiFiles(full));
    else if (/\.ts$/.test(name) && !name.endsWith('.d.ts')) {
      const route =
        '/api/' +
        relative(API_DIR, full)
          .replace(/\.ts$/, '')
          .replace(/(^|\/)index$/, '');
      found.push({ file: relative(API_DIR, full), path: route.replace(/\[(\w+)\]/g, '{$1}'), example: route.replace(/\[(\w+)\]/g, 'alice') });
    }
  }
  return found;
}

beforeAll(async () => {
  await server.ctx.database(); // opened and migrated before the answers are collected
  const answer = await fetch(`${server.url}/api/openapi.json`);
  expect(answer.status).toBe(200);
  doc = (await answer.json()) as Document;
  ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');
});

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** Validates a real answer against the document: its status (or default) must be described, with this body. */
async function expectDescribed(path: string, method: string, response: Response): Promise<unknown> {
  const operation = doc.paths[path]?.[method.toLowerCase()];
  expect(operation, `${method} ${path} is in the document`).toBeDefined();
  const status = String(response.status);
  const key = operation!.responses[status] ? status : 'default';
  expect(operation!.responses[key], `${method} ${path} ${status} is described`).toBeDefined();
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  const body = type === 'application/json' ? await response.json() : await response.text();
  if (type === 'application/json') {
    expect(operation!.responses[key]!.content?.['application/json'], `${method} ${path} ${status} has a JSON schema`).toBeDefined();
    const validate = ajv.getSchema(`openapi.json#/${pointer('paths', path, method.toLowerCase(), 'responses', key, 'content', 'application/json', 'schema')}`)!;
    expect(validate(body) ? [] : validate.errors, `${method} ${path} ${status} body ${JSON.stringify(body).slice(0, 300)}`).toEqual([]);
  }
  return body;
}

async function call(method: string, path: string, options: { query?: string; body?: unknown; headers?: Record<string, string>; documented?: string } = {}) {
  const response = await fetch(`${server.url}${path}${options.query ?? ''}`, {
    method,
    headers: { ...(options.body !== undefined && { 'content-type': 'application/json' }), ...options.headers },
    ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
  });
  return { status: response.status, body: (await expectDescribed(options.documented ?? path, method, response)) as Record<string, unknown> };
}

describe('/api/openapi.json', () => {
  it("is OpenAPI 3.1 with the L402 security scheme and the paid route's 402", () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.L402).toMatchObject({ type: 'http', scheme: 'L402' });
    const paid = doc.paths['/api/demo/btc-price']!.get!;
    expect(doc.components.securitySchemes.Payment).toMatchObject({ type: 'http', scheme: 'Payment' });
    expect(paid.security).toEqual([{ L402: [] }, { Payment: [] }]);
    expect(paid.responses['402']).toBeDefined();
    // The validator is not one that accepts anything.
    const priceSchema = ajv.getSchema(
      `openapi.json#/${pointer('paths', '/api/demo/btc-price', 'get', 'responses', '200', 'content', 'application/json', 'schema')}`,
    )!;
    expect(priceSchema({ usd: 1, source: 'x', fetchedAt: new Date().toISOString() })).toBe(true);
    expect(priceSchema({ usd: 'one', source: 'x', fetchedAt: 'yesterday' })).toBe(false);
    const challengeSchema = ajv.getSchema(
      `openapi.json#/${pointer('paths', '/api/demo/btc-price', 'get', 'responses', '402', 'content', 'application/json', 'schema')}`,
    )!;
    expect(challengeSchema({ error: 'x', code: 'PAYMENT_REQUIRED' })).toBe(false);
  });

  it('describes the dashboard login at /api/login, and its first path /api/session as deprecated', () => {
    expect(doc.components.securitySchemes.login).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes).not.toHaveProperty('session');
    const operations = (path: string) => doc.paths[path] as Record<string, { security?: unknown[]; deprecated?: boolean }>;
    for (const method of ['get', 'delete']) {
      expect(operations('/api/login')[method]).toMatchObject({ security: [{ login: [] }] });
      expect(operations('/api/login')[method]!.deprecated).toBeUndefined();
      expect(operations('/api/session')[method]).toMatchObject({ security: [{ login: [] }], deprecated: true });
    }
  });

  it("describes every api/ file's methods, and nothing else", async () => {
    const files = apiFiles();
    expect(files.length).toBeGreaterThan(20);
    for (const { file, path, example } of files) {
      const options = await fetch(`${server.url}${example}`, { method: 'OPTIONS' });
      const methods = (options.headers.get('allow') ?? '')
        .split(',')
        .map((m) => m.trim())
        .filter((m) => m && m !== 'OPTIONS');
      expect(methods.length, `${file} answers OPTIONS with Allow`).toBeGreaterThan(0);
      expect(Object.keys(doc.paths[path] ?? {}).sort(), `${file} (${path})`).toEqual(methods.map((m) => m.toLowerCase()).sort());
    }
    expect(Object.keys(doc.paths).sort()).toEqual(files.map((f) => f.path).sort());
  });

  it("the running service's answers validate against it", async () => {
    await call('GET', '/api/demo');
    const challenge = await call('GET', '/api/demo/btc-price');
    expect(challenge.status).toBe(402);
    const paid = await call('POST', '/api/dev/pay', { body: { invoice: challenge.body.invoice } });
    expect(paid.status).toBe(200);
    const served = await call('GET', '/api/demo/btc-price', { headers: { authorization: `L402 ${challenge.body.macaroon}:${paid.body.preimage}` } });
    expect(served.status).toBe(200);
    expect((await call('GET', '/api/demo/preimage', { query: `?hash=${challenge.body.paymentHash}` })).status).toBe(200);
    expect((await call('GET', '/api/demo/preimage', { query: `?hash=${'0'.repeat(64)}` })).status).toBe(404);
    expect((await call('GET', '/api/demo/preimage', { query: '?hash=xyz' })).status).toBe(400);
    expect((await call('POST', '/api/dev/pay', { body: { invoice: 'lnbcrt1nonsense' } })).status).toBe(400);

    const invoice = await call('POST', '/api/invoice', { body: { amountSats: 5 } });
    expect(invoice.status).toBe(200);
    expect((await call('POST', '/api/invoice', { body: { amountSats: 0 } })).status).toBe(400);
    expect((await call('POST', '/api/verify', { body: { token: `${challenge.body.macaroon}:${paid.body.preimage}` } })).body).toMatchObject({
      valid: false,
      code: 'TOKEN_ALREADY_USED',
    });
    expect((await call('POST', '/api/verify', { body: {} })).status).toBe(400);
    // Another method's 405 is described on the route's operations.
    const notAllowed = await fetch(`${server.url}/api/verify`, { method: 'PUT' });
    expect(notAllowed.status).toBe(405);
    await expectDescribed('/api/verify', 'POST', notAllowed);

    const proof = await addressProofHeaders(server.ctx, 'a@example.com');
    expect(
      (
        await call('POST', '/api/register', {
          headers: proof,
          body: { url: 'https://weather.example/now', name: 'Weather', price_sats: 3, lightning_address: 'a@example.com', category: 'weather' },
        })
      ).status,
    ).toBe(200);
    expect((await call('POST', '/api/register', { body: { url: 'nope' } })).status).toBe(400);
    expect((await call('GET', '/api/apis.json')).body).toMatchObject({ count: 1 });
    expect((await call('GET', '/api/apis.json', { query: '?category=nonsense' })).status).toBe(400);
    expect((await call('GET', '/api/dev-token', { query: '?address=a@example.com' })).status).toBe(200);
    expect((await call('POST', '/api/dev-token', { body: {} })).status).toBe(400);
    expect((await call('GET', '/api/pro-check', { query: '?address=a@example.com' })).body).toEqual({ active: false });
    await call('GET', '/api/health');
    const login = await call('GET', '/api/lnurl-auth');
    expect(login.status).toBe(200);
    expect((await call('GET', '/api/lnurl-auth', { query: `?k1=${login.body.k1}&pollToken=${login.body.pollToken}` })).status).toBe(202);
    expect((await call('GET', '/api/login')).status).toBe(401);
    expect((await call('DELETE', '/api/login')).status).toBe(401);
    expect((await call('GET', '/api/session')).status).toBe(401);
    expect((await call('GET', '/api/links')).status).toBe(401);
    expect((await call('GET', '/api/stats')).status).toBe(401);
    expect((await call('POST', '/api/delete-data')).status).toBe(200);
    expect((await call('GET', '/api/delete-data', { query: '?k1=x&pollToken=y' })).status).toBe(400);
    expect((await call('GET', '/api/cron/payouts')).status).toBe(503);
    expect((await call('GET', '/api/cron/flush-payments')).status).toBe(503);
    expect((await call('POST', '/api/split', { body: {} })).status).toBe(503);
    expect((await call('POST', '/api/provider-webhook', { body: {} })).status).toBeGreaterThanOrEqual(400);
    expect((await call('GET', '/api/lnurlp/alice', { documented: '/api/lnurlp/{username}' })).status).toBe(200);
    expect((await call('GET', '/api/openapi.json')).status).toBe(200);
  });
});
