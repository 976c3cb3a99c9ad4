// Interoperability: a third-party L402 client nobody here wrote (Alby's
// fetchWithL402) pays for and receives the demo, with a wallet backed by the
// embedded dev wallet.
import { describe, expect, it } from 'vitest';
import { fetchWithL402 } from '@getalby/lightning-tools/402';
import { Invoice } from '@getalby/lightning-tools/bolt11';
import { useDevServer } from '../support/server.js';

const server = useDevServer();

describe('@getalby/lightning-tools fetchWithL402', () => {
  it('pays the 402 with the dev wallet and receives /api/demo/btc-price', async () => {
    const paid: string[] = [];
    const wallet = {
      async payInvoice({ invoice }: { invoice: string }) {
        paid.push(invoice);
        const answer = await fetch(`${server.url}/api/dev/pay`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ invoice }),
        });
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
