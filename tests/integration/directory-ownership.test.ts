// Who may write a directory entry (POST /api/register), through the real
// local server on real PostgreSQL and real Redis. A Lightning Address is
// public (managed-mode tokens carry it), so naming it proves nothing: a
// registration proves control of the url (its origin answers a proof token,
// like ACME http-01; managed mode's wrapper does it by itself) or of the
// address (a dashboard session whose key has it linked). Whoever proves the
// url reclaims it from a squatter. Every origin here is a loopback server,
// which the service fetches only outside production.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { afterAll, describe, expect, it } from 'vitest';
import { withL402 } from 'l402-paywall/managed';
import { decodeToken } from 'l402-paywall';
import { closedPort } from '../../packages/l402-paywall/tests/support/ports.js';
import { testWallet, type ChallengeBody as AuthChallenge } from '../support/lnurl-wallet.js';
import type { ChallengeBody } from '../support/server.js';
import { stackSkipReason, useStack } from '../support/stack.js';

const skip = await stackSkipReason();
const APP_SECRET = 'operator-app-secret-0123456789abcdef0123456789abcdef';

interface WebServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** A Web-standard handler served on loopback, as an operator's app would be. */
async function serveWeb(handler: (request: Request) => Response | Promise<Response>, port = 0): Promise<WebServer> {
  const listener = getRequestListener(handler);
  // No keep-alive: an app restarted on the same port must not meet a client's pooled socket to the old one.
  const server: Server = createServer((request, response) => {
    response.shouldKeepAlive = false;
    return listener(request, response);
  });
  await new Promise<void>((resolve, reject) => server.listen(port, '127.0.0.1', resolve).once('error', reject));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // a restart on the same port must not meet the old keep-alive sockets
      }),
  };
}

describe.skipIf(skip !== undefined)(`directory ownership (local server, PostgreSQL, Redis)${skip ? ` [SKIPPED: ${skip}]` : ''}`, () => {
  // The operators' apps ask this service for an invoice at every 402 (their proof checks included).
  const stack = useStack(() => ({ REGISTER_RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000', INVOICE_RATE_LIMIT_PER_MINUTE: '100000' }));
  const servers: WebServer[] = [];
  afterAll(async () => {
    for (const server of servers) await server.close();
  });

  async function serve(handler: (request: Request) => Response | Promise<Response>, port = 0): Promise<WebServer> {
    const server = await serveWeb(handler, port);
    servers.push(server);
    return server;
  }

  function register(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${stack.url}/api/register`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  }

  async function expectCode(response: Response, status: number, code: string): Promise<{ error: string; code: string }> {
    const body = (await response.json()) as { error: string; code: string };
    expect(response.status, JSON.stringify(body)).toBe(status);
    expect(body).toEqual(expect.objectContaining({ error: expect.any(String), code }));
    return body;
  }

  /** A real LNURL-auth login; the address is linked as POST /api/links does after its 1-sat proof. */
  async function sessionLinkedTo(address: string): Promise<string> {
    const wallet = testWallet();
    const c = (await (await fetch(`${stack.url}/api/lnurl-auth`)).json()) as AuthChallenge;
    expect((await wallet.scan(c.lnurl)).body.status).toBe('OK');
    const { token } = (await (await fetch(`${stack.url}/api/lnurl-auth?${new URLSearchParams({ k1: c.k1, pollToken: c.pollToken })}`)).json()) as {
      token: string;
    };
    await stack.db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2)', [wallet.pubkey, address]);
    return token;
  }

  const entryOf = (url: string) =>
    stack.db.query<{ id: string; name: string; price_sats: number; description: string | null; lightning_address: string; updated_at: Date }>(
      'SELECT id, name, price_sats, description, lightning_address, updated_at FROM apis WHERE url = $1',
      [url],
    );

  /** An operator's managed-mode app registering `url` at its first request, with its errors collected. */
  function operatorApp(url: string, address: string, name: string, errors: unknown[], registrations: number[] = []) {
    // What POST /api/register answered the app, seen through the app's own fetch.
    const recordingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (String(input).endsWith('/api/register')) registrations.push(response.status);
      return response;
    };
    return withL402(() => Response.json({ paid: true }), {
      priceSats: 100,
      secret: APP_SECRET,
      managed: { lightningAddress: address, serviceUrl: stack.url, fetch: recordingFetch },
      register: { name, category: 'data', description: 'the real one', url },
      onError: (error) => errors.push(error),
    });
  }

  it('refuses a registration that proves nothing (403 OWNERSHIP_UNPROVEN) and writes nothing', async () => {
    const url = `http://127.0.0.1:${await closedPort()}/nobody`;
    const body = await expectCode(
      await register({ url, name: 'Unproved', price_sats: 1, lightning_address: 'someone@example.com' }),
      403,
      'OWNERSHIP_UNPROVEN',
    );
    expect(body.error).toContain('/.well-known/l402-directory/');
    expect(await entryOf(url)).toEqual([]);
  });

  it('a managed-mode app registers by itself; the owner address read from its 402 does not let anyone rewrite its entry', async () => {
    const address = `operator-${randomBytes(3).toString('hex')}@example.com`;
    const errors: unknown[] = [];
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}/v1/data`;
    await serve(operatorApp(url, address, 'Real API', errors), port);
    const challenge = await fetch(url);
    expect(challenge.status).toBe(402);
    await expect.poll(async () => (await entryOf(url)).length, { timeout: 30_000 }).toBe(1);
    expect(errors).toEqual([]);
    const [before] = await entryOf(url);
    expect(before).toMatchObject({ name: 'Real API', price_sats: 100, lightning_address: address });

    // The attacker reads the owner from the token's caveats...
    const { macaroon } = (await challenge.json()) as ChallengeBody;
    const owner = decodeToken(macaroon)!
      .caveats.find((c) => c.startsWith('owner='))!
      .slice('owner='.length);
    expect(owner).toBe(address);
    const hijack = { url, name: 'Hijacked', price_sats: 1, description: 'send your sats elsewhere', lightning_address: owner };
    // ...and re-registers with it: with no proof,
    await expectCode(await register(hijack), 403, 'OWNERSHIP_UNPROVEN');
    // with a proof token of its own (the app answers only tokens its instances made: the request reaches the paywall),
    const attempt = await expectCode(await register({ ...hijack, proof_token: randomBytes(32).toString('base64url') }), 403, 'OWNERSHIP_UNPROVEN');
    expect(attempt.error).toMatch(/\/v1\/data answered 402; .*l402-directory.* answered 402/);
    // or with a session of its own key, which the owner's address is not linked to.
    const mallory = await sessionLinkedTo(`mallory-${randomBytes(3).toString('hex')}@evil.example`);
    await expectCode(await register(hijack, { authorization: `Bearer ${mallory}` }), 403, 'ADDRESS_NOT_LINKED');
    expect(await entryOf(url)).toEqual([before]);
  });

  it('a squatter registers the url first with its own address; the managed app proves the url and reclaims it', async () => {
    const address = `owner-${randomBytes(3).toString('hex')}@example.com`;
    const squatterAddress = `squatter-${randomBytes(3).toString('hex')}@evil.example`;
    const squatter = await sessionLinkedTo(squatterAddress);
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}/v1/data`;
    const squatted = await register({ url, name: 'Squatted', price_sats: 5, lightning_address: squatterAddress }, { authorization: `Bearer ${squatter}` });
    expect(await squatted.json()).toEqual({ ok: true, id: expect.any(String), proof: 'address' });
    const [squat] = await entryOf(url);

    const errors: unknown[] = [];
    const app = await serve(operatorApp(url, address, 'Reclaimed', errors), port);
    expect((await fetch(url)).status).toBe(402);
    await expect.poll(async () => (await entryOf(url))[0]?.lightning_address, { timeout: 30_000 }).toBe(address);
    expect(errors).toEqual([]);
    const [reclaimed] = await entryOf(url);
    expect(reclaimed).toMatchObject({ id: squat!.id, name: 'Reclaimed', price_sats: 100, description: 'the real one' });
    // The squatter's address proof no longer reaches the entry.
    await expectCode(
      await register({ url, name: 'Mine again', price_sats: 5, lightning_address: squatterAddress }, { authorization: `Bearer ${squatter}` }),
      409,
      'URL_OWNED',
    );

    // The app restarts (a new process: new wrapper, same secret, same url) and registers again: same entry, nothing changed.
    await app.close();
    servers.splice(servers.indexOf(app), 1);
    const errorsAfterRestart: unknown[] = [];
    const registrations: number[] = [];
    const restarted = await serve(operatorApp(url, address, 'Reclaimed', errorsAfterRestart, registrations), port);
    expect((await fetch(`${restarted.url}/v1/data`)).status).toBe(402);
    await expect.poll(() => registrations, { timeout: 30_000 }).toEqual([200]);
    expect(errorsAfterRestart).toEqual([]);
    expect(await entryOf(url)).toEqual([reclaimed]); // same id, same content, updated_at unchanged
  });

  it('an origin proves control with a file at /.well-known/l402-directory/<token>; another address, text or a redirect proves nothing', async () => {
    const token = randomBytes(32).toString('base64url');
    const address = `static-${randomBytes(3).toString('hex')}@example.com`;
    let served = `${token}.${address}`;
    const elsewhere = await serve(() => new Response(served));
    const origin = await serve((request) => {
      const path = new URL(request.url).pathname;
      if (path === `/.well-known/l402-directory/${token}`) return new Response(served + '\n', { headers: { 'content-type': 'text/plain' } });
      return new Response('no', { status: 404 });
    });
    const url = `${origin.url}/static/api`;
    const first = await register({ url, name: 'Static', price_sats: 2, lightning_address: address, proof_token: token });
    expect(await first.json()).toEqual({ ok: true, id: expect.any(String), proof: 'url' });
    // Another address than the one the file names:
    await expectCode(
      await register({ url, name: 'Other', price_sats: 2, lightning_address: 'other@example.com', proof_token: token }),
      403,
      'OWNERSHIP_UNPROVEN',
    );
    // Other text:
    served = 'hello';
    await expectCode(await register({ url, name: 'Changed', price_sats: 2, lightning_address: address, proof_token: token }), 403, 'OWNERSHIP_UNPROVEN');
    expect(await entryOf(url)).toMatchObject([{ name: 'Static' }]);
    // A redirect to a host that would answer:
    served = `${token}.${address}`;
    const redirecting = await serve((request) => Response.redirect(`${elsewhere.url}${new URL(request.url).pathname}`, 302));
    const redirected = await expectCode(
      await register({ url: `${redirecting.url}/api`, name: 'Redirected', price_sats: 2, lightning_address: address, proof_token: token }),
      403,
      'OWNERSHIP_UNPROVEN',
    );
    expect(redirected.error).toContain('redirect');
    expect(await entryOf(`${redirecting.url}/api`)).toEqual([]);
  });

  it('the address proof: a session whose key has the address linked creates and updates its entry (no fetch to the url)', async () => {
    const address = `linked-${randomBytes(3).toString('hex')}@example.com`;
    const session = await sessionLinkedTo(address);
    const url = `http://127.0.0.1:${await closedPort()}/offline`; // nothing listens: no url proof is possible
    const first = (await (
      await register({ url, name: 'Linked', price_sats: 3, lightning_address: address }, { authorization: `Bearer ${session}` })
    ).json()) as { id: string; proof: string };
    expect(first.proof).toBe('address');
    const again = (await (
      await register({ url, name: 'Linked v2', price_sats: 4, lightning_address: address }, { authorization: `Bearer ${session}` })
    ).json()) as { id: string };
    expect(again.id).toBe(first.id);
    expect(await entryOf(url)).toMatchObject([{ name: 'Linked v2', price_sats: 4 }]);
    await expectCode(
      await register({ url, name: 'x', price_sats: 3, lightning_address: address }, { authorization: 'Bearer not-a-session' }),
      401,
      'SESSION_INVALID',
    );
  });
});
