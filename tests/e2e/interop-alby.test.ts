// Interoperability: a third-party L402 client nobody here wrote (Alby's
// fetchWithL402) pays for and receives the demo, with a wallet backed by the
// embedded dev wallet.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchWithL402 } from '@getalby/lightning-tools/402';
import { Invoice } from '@getalby/lightning-tools/bolt11';
import { resetServiceContext } from '../../lib/service/context.js';
import { startDevServer, type DevServer } from '../../scripts/dev-server.js';

let server: DevServer;
const saved = { ...process.env };

beforeAll(async () => {
  Object.assign(process.env, {
    L402_SECRET: 'interop-test-secret-0123456789abcdef0123456789abcdef',
    BTC_PRICE_SOURCES: 'none',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'l402-interop-')),
  });
  resetServiceContext();
  server = await startDevServer({ port: 0 });
});
afterAll(async () => {
  await server?.close();
  process.env = saved;
  resetServiceContext();
});

describe('@getalby/lightning-tools fetchWithL402', () => {
  it('pays the 402 with the dev wallet and receives /api/demo/btc-price', async () => {
    const paid: string[] = [];
    const wallet = {
      async payInvoice({ invoice }: { invoice: string }) {
        paid.push(invoice);
        const answer = await fetch(`${server.url}/api/dev/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoice }) });
        if (!answer.ok) throw new Error(`dev wallet refused: ${answer.status} ${await answer.text()}`);
        const { preimage } = (await answer.json()) as { preimage: string };
        return { preimage };
      },
    };

    const response = await fetchWithL402(`${server.url}/api/demo/btc-price`, {}, { wallet });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { usd: number; source: string; fetchedAt: string };
    expect(body.usd).toBeGreaterThan(0);
    expect(body.source).toBe('simulated');
    expect(new Date(body.fetchedAt).toISOString()).toBe(body.fetchedAt);
    expect(paid).toHaveLength(1);
    expect(paid[0]).toMatch(/^lnbcrt10n1/); // 1 sat on the dev node's regtest network
    // Alby's own BOLT11 decoder reads the dev node's invoice as we wrote it.
    const decoded = new Invoice({ pr: paid[0]! });
    expect(decoded.satoshi).toBe(1);
    expect(decoded.description).toBe('L402 demo: live BTC price');
  });
});
