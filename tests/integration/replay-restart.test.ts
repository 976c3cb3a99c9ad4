// A credential used once stays used after the local server restarts (`npm
// start` with its embedded defaults: in-memory store, a secret generated and
// kept under DATA_DIR; the database, which replay marks do not use, in memory). The restart is a new
// config and service context on the same DATA_DIR, as a new process would build.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { keepLocalKeys } from '../../scripts/local-keys.js';
import { createDeployment } from '../../lib/service/deployment.js';
import { startDevServer, type DevServer } from '../../scripts/dev-server.js';
import type { ChallengeBody } from '../support/server.js';

describe('replay marks across a restart of the local server', () => {
  let dataDir = '';
  let server: DevServer | undefined;

  async function start(): Promise<string> {
    // The embedded defaults only: no L402_SECRET (generated and kept under DATA_DIR, as npm start does), no shared store, the dev node.
    const config = keepLocalKeys(loadConfig({ DATA_DIR: dataDir, BTC_PRICE_SOURCES: 'none', DATABASE_URL: 'pglite://memory' }));
    server = await startDevServer({ port: 0, deployment: createDeployment(config) });
    return server.url;
  }
  async function stop(): Promise<void> {
    await server?.close();
    server = undefined;
  }

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'l402-restart-'));
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function buyDemo(url: string): Promise<string> {
    const challenge = (await (await fetch(`${url}/api/demo/btc-price`)).json()) as ChallengeBody;
    const paid = await fetch(`${url}/api/dev/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoice: challenge.invoice }),
    });
    expect(paid.status).toBe(200);
    return `L402 ${challenge.macaroon}:${((await paid.json()) as { preimage: string }).preimage}`;
  }

  it('a used credential is refused after a restart, an unused one still works once, and the secret is the same', async () => {
    let url = await start();
    const used = await buyDemo(url);
    const unused = await buyDemo(url);
    const viaVerify = await buyDemo(url);
    expect((await fetch(`${url}/api/demo/btc-price`, { headers: { authorization: used } })).status).toBe(200);
    const consumed = await fetch(`${url}/api/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: viaVerify, consume: true }),
    });
    expect(await consumed.json()).toMatchObject({ valid: true });
    const secret = readFileSync(join(dataDir, 'l402-secret'), 'utf8');
    await stop();

    url = await start();
    expect(readFileSync(join(dataDir, 'l402-secret'), 'utf8')).toBe(secret); // the tokens still verify...
    const again = await fetch(`${url}/api/demo/btc-price`, { headers: { authorization: used } });
    expect(again.status).toBe(402); // ...but the used one stays used
    expect(((await again.json()) as { code: string }).code).toBe('TOKEN_ALREADY_USED');
    expect((await fetch(`${url}/api/demo/btc-price`, { headers: { authorization: viaVerify } })).status).toBe(402);
    expect((await fetch(`${url}/api/demo/btc-price`, { headers: { authorization: unused } })).status).toBe(200);
    expect((await fetch(`${url}/api/demo/btc-price`, { headers: { authorization: unused } })).status).toBe(402);
    await stop();

    // And after one more restart (the journal was rewritten at the previous start).
    url = await start();
    for (const authorization of [used, unused, viaVerify]) {
      expect((await fetch(`${url}/api/demo/btc-price`, { headers: { authorization } })).status).toBe(402);
    }
    await stop();
  }, 60_000);
});
