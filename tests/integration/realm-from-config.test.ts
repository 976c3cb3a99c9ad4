// The Payment challenges' realm comes from configuration (the public origin's
// host name: PUBLIC_URL, else where the local server listens), never from the
// request's Host header, which the client chooses. Through the real local
// server, with a forged Host sent over a raw socket.
import { Challenge, Credential } from 'mppx';
import { describe, expect, it } from 'vitest';
import { createBudget, createSessions, devWallet, fetchWithL402 } from 'l402-paywall/client';
import { rawRequest } from '../support/raw-request.js';
import { useDevServer } from '../support/server.js';

const local = useDevServer(() => ({ DATABASE_URL: undefined, DEMO_STREAM_INTERVAL_MS: '0' }));
const published = useDevServer(() => ({ DATABASE_URL: undefined, PUBLIC_URL: 'https://pay.example.com' }));

/** The demo's 402 asked for with `Host: <host>`: its Payment challenges (charge and session) and body. */
async function challengesNaming(base: string, host: string) {
  const answer = await rawRequest(`${base}/api/demo/btc-price`, { headers: { host } });
  expect(answer.status).toBe(402);
  const header = String(answer.headers['www-authenticate']);
  const payment = Challenge.fromHeadersList(new Headers({ 'www-authenticate': header }));
  return { header, payment, body: answer.body as { invoice: string } };
}

describe('the realm is configuration, not the Host header', () => {
  it('a forged Host is not echoed: every Payment challenge names the host the server is configured with (PUBLIC_URL)', async () => {
    for (const host of ['evil.example', 'evil.example:8443', 'pay.example.com:8443']) {
      const { header, payment } = await challengesNaming(published.url, host);
      expect(payment.map((c) => [c.intent, c.realm])).toEqual([
        ['charge', 'pay.example.com'],
        ['session', 'pay.example.com'],
      ]);
      expect(header).not.toContain('evil.example');
    }
  });

  it('without PUBLIC_URL, the local server names the host name it listens on (no port, as mppx validates it)', async () => {
    const { payment } = await challengesNaming(local.url, 'evil.example');
    const listening = new URL(local.url).hostname;
    expect(payment.map((c) => c.realm)).toEqual([listening, listening]);
  });

  it('a charge bought under a forged Host is served at the real one: one realm, whichever Host asked', async () => {
    const { payment, body } = await challengesNaming(local.url, 'evil.example');
    const charge = payment.find((c) => c.intent === 'charge')!;
    const paid = await fetch(`${local.url}/api/dev/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoice: body.invoice }),
    });
    const { preimage } = (await paid.json()) as { preimage: string };
    const credential = Credential.serialize(Credential.from({ challenge: charge, payload: { preimage } }));
    const served = await fetch(`${local.url}/api/demo/btc-price`, { headers: { authorization: credential } });
    expect(served.status).toBe(200);
  });

  it('the paying client keeps its session under the configured realm, and spends and closes it there', async () => {
    const sessions = createSessions({ maxDepositSats: 20 });
    const options = { wallet: devWallet({ serviceUrl: local.url }), maxPriceSats: 1, budget: createBudget({ totalSats: 100 }), sessions };
    const first = await fetchWithL402(`${local.url}/api/demo/stream?chunks=2`, undefined, options);
    expect(first.status).toBe(200);
    await first.text();
    const [held] = sessions.list();
    expect(held?.realm).toBe(new URL(local.url).hostname);
    const second = await fetchWithL402(`${local.url}/api/demo/stream?chunks=2`, undefined, options);
    expect(second.status).toBe(200);
    await second.text();
    // The same session served the second call: the bearer's realm was the one it opened under.
    expect(sessions.list().map((s) => s.sessionId)).toEqual([held!.sessionId]);
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ realm: new URL(local.url).hostname, status: 200, refundStatus: 'succeeded' });
  });
});
