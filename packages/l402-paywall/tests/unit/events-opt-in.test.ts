// onEvent is opt-in down to the module: unset, the event builder is never even
// loaded (so no event object can be built), and requests, payments and
// refusals go exactly as before. This file imports nothing from
// l402-paywall/events, so the builder module's loading is the paywall's alone.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import express from 'express';
import { withL402, type L402Options } from 'l402-paywall';
import { l402Middleware } from 'l402-paywall/express';
import { createDevNode } from 'l402-paywall/backends';
import { lightningSessions, memorySessionLedger } from 'l402-paywall/sessions';
import { payChallenge, recordingProvider } from '../support/l402.js';
import { listenNode, type Listening } from '../support/listen.js';

const builder = vi.hoisted(() => ({ loads: 0 }));
vi.mock(import('../../src/events/server.js'), async (importOriginal) => {
  builder.loads += 1;
  return importOriginal();
});

// The prepaid sessions' event builder: loaded by a paywall that sells sessions and has onEvent, and by no other.
const sessionBuilder = vi.hoisted(() => ({ loads: 0 }));
vi.mock(import('../../src/events/session.js'), async (importOriginal) => {
  sessionBuilder.loads += 1;
  return importOriginal();
});

const SECRET = 'opt-in-test-secret-0123456789abcdef0123456789abcdef';

async function paidFlow(options: Partial<L402Options> = {}) {
  const provider = recordingProvider();
  const handler = withL402(() => Response.json({ ok: true }), { priceSats: 3, provider, secret: SECRET, ...options });
  const challenge = await handler(new Request('http://shop.example/paid'));
  const authorization = await payChallenge(challenge, provider);
  const refused = await handler(new Request('http://shop.example/paid', { headers: { authorization: 'L402 garbage:00' } }));
  const served = await handler(new Request('http://shop.example/paid', { headers: { authorization } }));
  const replayed = await handler(new Request('http://shop.example/paid', { headers: { authorization } }));
  return {
    statuses: [challenge.status, refused.status, served.status, replayed.status],
    bodies: [(await refused.json()).code, await served.json(), (await replayed.json()).code],
  };
}

describe('onEvent unset', () => {
  let server: Listening;
  let base: string;
  beforeAll(async () => {
    const provider = recordingProvider();
    const app = express();
    app.get('/paid', l402Middleware({ priceSats: 2, provider, secret: SECRET }), (_req, res) => {
      res.json({ ok: true });
    });
    server = await listenNode(app);
    base = `${server.url}`;
  });
  afterAll(() => server.close());

  it('withL402 and l402Middleware never load the event builder: no event object exists', async () => {
    const flow = await paidFlow();
    expect(flow.statuses).toEqual([402, 402, 200, 402]);
    expect(flow.bodies).toEqual(['INVALID_PREIMAGE', { ok: true }, 'TOKEN_ALREADY_USED']);
    expect((await fetch(`${base}/paid`)).status).toBe(402);
    // Every microtask and timer the paths could have scheduled has run by now.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(builder.loads).toBe(0);
  });

  it('and the check itself can fail: set, the builder is loaded and events arrive with the same answers', async () => {
    const events: { type: string }[] = [];
    const flow = await paidFlow({ onEvent: (event) => void events.push(event) });
    expect(flow.statuses).toEqual([402, 402, 200, 402]);
    expect(flow.bodies).toEqual(['INVALID_PREIMAGE', { ok: true }, 'TOKEN_ALREADY_USED']);
    await vi.waitFor(() => expect(events.length).toBe(6));
    expect(builder.loads).toBe(1);
  });
});

describe("the session event builder: onEvent and a session's", () => {
  const sold = (options: Partial<L402Options>) =>
    withL402(() => Response.json({ ok: true }), { priceSats: 1, provider: createDevNode(), secret: SECRET, onError: () => {}, ...options });
  const session = () => lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger() });
  const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

  it('is never loaded without a session (whatever onEvent), nor for a session without onEvent', async () => {
    sold({ onEvent: () => {} });
    const unwatched = sold({ session: session() });
    expect((await unwatched(new Request('http://shop.example/stream'))).status).toBe(402);
    await settled();
    expect(sessionBuilder.loads).toBe(0);
  });

  it('is loaded by a paywall that sells sessions and has onEvent', async () => {
    sold({ session: session(), onEvent: () => {} });
    await vi.waitFor(() => expect(sessionBuilder.loads).toBe(1));
  });
});
