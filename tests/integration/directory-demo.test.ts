// The service lists its own demo (GET /api/demo/btc-price, and where it sells
// prepaid sessions its metered stream) in its directory, so that an agent's
// first list_paid_apis finds something to call: marked `demo: true`, once, at
// the service's public URL from configuration. Here, on
// the real local server and real PostgreSQL, a production deployment (where
// nothing runs at start-up, so the first listing does it); `npm start`'s own
// listing at start-up is tested in tests/integration/npm-start.test.ts.
import { describe, expect, it } from 'vitest';
import { requestNamingHost } from '../support/host-header.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn } from '../support/server.js';

const backends = await databaseBackends();
const postgres = backends.find((b) => b.name === 'PostgreSQL')!;

/** Production with everything it needs; the backends are unreachable, and listing the directory calls none of them. */
const PRODUCTION = {
  NODE_ENV: 'production',
  L402_SECRET: 'p'.repeat(40),
  UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:9',
  UPSTASH_REDIS_REST_TOKEN: 't',
  LIGHTNING_PROVIDER: 'lnbits',
  LNBITS_URL: 'http://127.0.0.1:9',
  LNBITS_API_KEY: 'k',
  PUBLIC_URL: 'https://l402.example',
};

interface Listing {
  count: number;
  apis: Record<string, unknown>[];
}

describe.skipIf(postgres.skip)("the demo in the service's own directory, in production (local server, PostgreSQL)", () => {
  const server = useDevServerOn(postgres, () => PRODUCTION);
  /** GET /api/apis.json as a client that names another host in its Host header. */
  const listing = async (host = 'attacker.example') => {
    const answer = await requestNamingHost(`${server.url}/api/apis.json`, host);
    expect(answer.status).toBe(200);
    return JSON.parse(answer.body) as Listing;
  };
  /** A new instance of the same deployment, or of `settings` over it, on the same database. */
  const newInstance = (settings: Record<string, string | undefined> = {}) =>
    server.redeploy(server.config(settings), { database: () => Promise.resolve(server.db) });
  const demoRows = () => server.db.query<{ url: string; created_at: Date; updated_at: Date }>('SELECT url, created_at, updated_at FROM apis WHERE demo');

  it('with PUBLIC_URL: the first listing lists the demo there, marked demo: true, whatever Host it names; a new instance changes nothing', async () => {
    await server.db.query(
      "INSERT INTO apis (url, name, price_sats, lightning_address) VALUES ('https://api.example.com/v1/price', 'Price feed', 5, 'alice@example.com')",
    );
    const first = await listing();
    const demo = {
      url: 'https://l402.example/api/demo/btc-price',
      name: 'L402 demo: live BTC price',
      description: expect.stringContaining("This service's own demo"),
      price_sats: 1,
      category: 'finance',
      created_at: expect.any(String),
      demo: true,
    };
    expect(first.count).toBe(2);
    expect(first.apis).toEqual(
      expect.arrayContaining([
        demo,
        { url: 'https://api.example.com/v1/price', name: 'Price feed', description: null, price_sats: 5, category: null, created_at: expect.any(String) },
      ]),
    );
    expect(JSON.stringify(first)).not.toContain('attacker.example');
    const [row] = await demoRows();

    newInstance();
    try {
      expect(await listing('another.example')).toEqual(first);
      expect(await demoRows()).toEqual([row]); // not even updated_at moved
      expect((await listing()).apis.filter((a) => a.demo)).toHaveLength(1);
    } finally {
      server.restore();
    }
  });

  it('when PUBLIC_URL changes, the demo moves: still one entry', async () => {
    newInstance({ PUBLIC_URL: 'https://pay.example.org' });
    try {
      const demos = (await listing()).apis.filter((a) => a.demo);
      expect(demos.map((a) => a.url)).toEqual(['https://pay.example.org/api/demo/btc-price']);
      expect((await demoRows()).map((r) => r.url)).toEqual(['https://pay.example.org/api/demo/btc-price']);
    } finally {
      server.restore();
    }
  });

  it('without a public URL it is never listed, whatever Host the listing request names', async () => {
    await server.db.query('DELETE FROM apis WHERE demo');
    newInstance({ PUBLIC_URL: undefined });
    try {
      for (const host of ['attacker.example', new URL(server.url).host]) {
        const answer = await listing(host);
        expect(answer.apis.filter((a) => a.demo)).toEqual([]);
        expect(answer.apis.map((a) => a.url)).not.toContain(`http://${host}/api/demo/btc-price`);
      }
      expect(await demoRows()).toEqual([]);
    } finally {
      server.restore();
    }
  });
});

describe.skipIf(postgres.skip)('the demo stream in the directory where the demo sells prepaid sessions (the dev node, local server, PostgreSQL)', () => {
  // The dev node refunds, so the demo sells sessions and its stream; LNbits (above) cannot, and the stream is not listed there.
  const server = useDevServerOn(postgres, () => ({ PUBLIC_URL: 'https://l402.example' }));

  it('lists the stream beside the BTC price, both demo: true, the stream saying it is sold by the session only; once each, whatever the instance', async () => {
    const listing = async () => {
      const answer = await fetch(`${server.url}/api/apis.json`);
      expect(answer.status).toBe(200);
      return (await answer.json()) as Listing;
    };
    const first = await listing();
    expect(first.apis.map((a) => [a.url, a.demo])).toEqual(
      expect.arrayContaining([
        ['https://l402.example/api/demo/btc-price', true],
        ['https://l402.example/api/demo/stream', true],
      ]),
    );
    expect(first.count).toBe(2);
    expect(first.apis.find((a) => a.url === 'https://l402.example/api/demo/stream')).toEqual({
      url: 'https://l402.example/api/demo/stream',
      name: 'L402 demo: metered stream',
      description: expect.stringMatching(/prepaid session .*sold by the session only/),
      price_sats: 1,
      category: 'data',
      created_at: expect.any(String),
      demo: true,
    });
    server.redeploy(server.config(), { database: () => Promise.resolve(server.db) });
    try {
      expect(await listing()).toEqual(first);
    } finally {
      server.restore();
    }
  });
});
