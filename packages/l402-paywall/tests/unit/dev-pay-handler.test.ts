// createDevPayHandler: the dev wallet endpoint a library user mounts at
// /api/dev/pay (and the hosted service's own /api/dev/pay). Every refusal is
// JSON {error, code} with a 4xx; in production it pays nothing.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, randomBytes } from '@noble/hashes/utils.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createDevNode, createDevPayHandler, memoryDevNodeStore } from 'l402-paywall/backends';
import vectors from '../fixtures/bolt11-vectors.json' with { type: 'json' };

const URL_ = 'http://app.example/api/dev/pay';

function setup() {
  const devNode = createDevNode({ store: memoryDevNodeStore() });
  return { devNode, pay: createDevPayHandler(devNode) };
}

const post = (body: BodyInit | null, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  new Request(URL_, { method: 'POST', body, headers, ...(body instanceof ReadableStream && { duplex: 'half' }) });

async function expectError(response: Response, status: number, code: string): Promise<{ error: string; code: string }> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/json');
  const body = (await response.json()) as { error: string; code: string };
  expect(body.code).toBe(code);
  expect(typeof body.error).toBe('string');
  expect(body.error.length).toBeGreaterThan(0);
  return body;
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('createDevPayHandler', () => {
  it('pays an invoice of the dev node: {preimage, paymentHash, amountMsat}, then 409 ALREADY_PAID', async () => {
    const { devNode, pay } = setup();
    const { invoice, paymentHash } = await devNode.createInvoice({ amountMsat: 21_000 });
    const response = await pay(post(JSON.stringify({ invoice })));
    expect(response.status).toBe(200);
    const paid = (await response.json()) as { preimage: string; paymentHash: string; amountMsat: number };
    expect(paid).toEqual({ preimage: expect.stringMatching(/^[0-9a-f]{64}$/), paymentHash, amountMsat: 21_000 });
    expect(bytesToHex(sha256(hexToBytes(paid.preimage)))).toBe(paymentHash);
    expect(await devNode.lookupInvoice(paymentHash)).toMatchObject({ settled: true });

    const again = await expectError(await pay(post(JSON.stringify({ invoice }))), 409, 'ALREADY_PAID');
    expect(again).not.toHaveProperty('preimage');
  });

  it('refuses bodies that are not {invoice} with 400, naming the problem', async () => {
    const { pay } = setup();
    expect((await expectError(await pay(post('')), 400, 'INVALID_JSON')).error).toBe('Request body must be a JSON object');
    expect((await expectError(await pay(post('{')), 400, 'INVALID_JSON')).error).toBe('Request body is not valid JSON');
    expect((await expectError(await pay(post(new Uint8Array([0xff, 0xfe]))), 400, 'INVALID_JSON')).error).toBe('Request body is not valid UTF-8');
    expect((await expectError(await pay(post('{}')), 400, 'INVALID_REQUEST')).error).toBe('invoice is required (a BOLT11 invoice of the dev node)');
    for (const body of ['{"invoice":42}', '{"invoice":""}', '[]', 'null', '{"invoice":"x","extra":1}'])
      await expectError(await pay(post(body)), 400, 'INVALID_REQUEST');
  });

  it('refuses invoices it cannot pay: 400 INVALID_INVOICE, 400 NOT_DEV_INVOICE, 404 UNKNOWN_INVOICE', async () => {
    const privateKey = bytesToHex(randomBytes(32));
    const pay = createDevPayHandler(createDevNode({ store: memoryDevNodeStore(), privateKey }));
    await expectError(await pay(post(JSON.stringify({ invoice: 'lnbcrt1nonsense' }))), 400, 'INVALID_INVOICE');
    const foreign = vectors.valid.find((vector) => vector.note === '2500u, expiry 60')!.invoice;
    await expectError(await pay(post(JSON.stringify({ invoice: foreign }))), 400, 'NOT_DEV_INVOICE');
    // Signed with this node's key but issued on another store (as before a restart): never issued here.
    const twin = createDevNode({ store: memoryDevNodeStore(), privateKey });
    const { invoice } = await twin.createInvoice({ amountMsat: 1000 });
    await expectError(await pay(post(JSON.stringify({ invoice }))), 404, 'UNKNOWN_INVOICE');
  });

  it('bounds the body: 413 when larger than 16 KiB (declared or sent), 408 when it does not arrive in time', async () => {
    const { devNode } = setup();
    const pay = createDevPayHandler(devNode, { bodyTimeoutMs: 200 });
    await expectError(await pay(post('{}', { 'content-length': String(17 * 1024) })), 413, 'BODY_TOO_LARGE');
    await expectError(await pay(post(JSON.stringify({ invoice: 'x'.repeat(20_000) }))), 413, 'BODY_TOO_LARGE');
    const trickle = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(new TextEncoder().encode('{"inv')) });
    const slow = await pay(post(trickle));
    await expectError(slow, 408, 'REQUEST_TIMEOUT');
    expect(slow.headers.get('connection')).toBe('close');
  });

  it('answers 405 with Allow: POST to other methods', async () => {
    const { pay } = setup();
    const response = await pay(new Request(URL_));
    await expectError(response, 405, 'METHOD_NOT_ALLOWED');
    expect(response.headers.get('allow')).toBe('POST');
  });

  it('pays when NODE_ENV is unset, development or test; anything else counts as production: 404, nothing paid', async () => {
    const { devNode, pay } = setup();
    for (const allowed of [undefined, 'development', 'test']) {
      vi.stubEnv('NODE_ENV', allowed);
      const { invoice } = await devNode.createInvoice({ amountMsat: 1000 });
      expect((await pay(post(JSON.stringify({ invoice })))).status, String(allowed)).toBe(200);
    }
    for (const refused of ['production', 'staging', 'Production', '']) {
      // Made where the dev node runs (under a production NODE_ENV it makes none: dev-node-production.test.ts).
      vi.stubEnv('NODE_ENV', 'test');
      const { invoice, paymentHash } = await devNode.createInvoice({ amountMsat: 1000 });
      vi.stubEnv('NODE_ENV', refused);
      const body = await expectError(await pay(post(JSON.stringify({ invoice }))), 404, 'NOT_FOUND');
      expect(body.error).toContain('only outside production');
      expect(await devNode.lookupInvoice(paymentHash)).toMatchObject({ settled: false });
    }
  });

  it('refuses to be built without a dev node', () => {
    expect(() => createDevPayHandler(undefined as never)).toThrow(/createDevNode/);
  });
});
