// Where the signed payment_received webhook of POST /api/invoice goes: the
// service's configured public URL, never the request's Host header (which the
// client chooses). Through the real local server on real PostgreSQL and Redis;
// the embedded dev node delivers the webhook when the dev wallet pays.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackSkipReason, useStack } from '../support/stack.js';

const skip = await stackSkipReason();

interface Recorder {
  url: string;
  posts: { path: string; body: string }[];
  close(): Promise<void>;
}

/** A loopback server that records every request it gets and answers 200. */
async function recorder(): Promise<Recorder> {
  const posts: Recorder['posts'] = [];
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      posts.push({ path: request.url ?? '', body });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    posts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** POST with a Host header of the caller's choosing (fetch would not let us set it). */
function postWithHost(url: string, host: string, body: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const request = httpRequest(
      url,
      { method: 'POST', headers: { host, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
      (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

describe.skipIf(skip !== undefined)(`POST /api/invoice webhook URL (local server, PostgreSQL, Redis)${skip ? ` [SKIPPED: ${skip}]` : ''}`, () => {
  let configured: Recorder;
  let attacker: Recorder;
  beforeAll(async () => {
    [configured, attacker] = await Promise.all([recorder(), recorder()]);
  });
  afterAll(async () => {
    await configured?.close();
    await attacker?.close();
  });
  const stack = useStack(() => ({ PUBLIC_URL: configured.url }));

  it('a spoofed Host header does not receive the signed webhook: PUBLIC_URL does', async () => {
    const attackerHost = new URL(attacker.url).host;
    const issued = await postWithHost(`${stack.url}/api/invoice`, attackerHost, { amountSats: 3, ownerAddress: 'owner@example.com' });
    expect(issued.status, issued.body).toBe(200);
    const { paymentRequest, paymentHash } = JSON.parse(issued.body) as { paymentRequest: string; paymentHash: string };

    const paid = await fetch(`${stack.url}/api/dev/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoice: paymentRequest }),
    });
    expect(paid.status).toBe(200); // the dev node delivers the webhook before it answers

    expect(attacker.posts).toEqual([]);
    expect(configured.posts).toEqual([{ path: '/api/provider-webhook', body: expect.stringContaining(paymentHash) }]);
  });
});
