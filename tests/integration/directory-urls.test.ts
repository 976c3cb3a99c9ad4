// Which urls the public directory accepts (POST /api/register), through the
// real local server: whatever the proof, only a url the service would fetch
// itself (https on a public host; outside production plain http and loopback
// too). Agents fetch what /api/apis.json lists, so an entry must not point
// them at a cloud metadata service, a Lightning node's admin port on their
// own machine, or their LAN.
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { addressProofHeaders } from '../support/directory.js';
import { useDevServer } from '../support/server.js';

const server = useDevServer(() => ({ REGISTER_RATE_LIMIT_PER_MINUTE: '100000' }));
const ADDRESS = 'owner@example.com';
let proof: Record<string, string> = {};

beforeAll(async () => {
  await server.ctx.database();
  proof = await addressProofHeaders(server.ctx, ADDRESS);
});

function register(url: string, headers: Record<string, string> = proof, extra: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${server.url}/api/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ url, name: 'Entry', price_sats: 1, lightning_address: ADDRESS, ...extra }),
  });
}

async function listed(): Promise<string[]> {
  const listing = (await (await fetch(`${server.url}/api/apis.json`)).json()) as { apis: { url: string }[] };
  return listing.apis.map((api) => api.url);
}

async function expectRefused(url: string, headers?: Record<string, string>, extra?: Record<string, unknown>): Promise<string> {
  const response = await register(url, headers, extra);
  const body = (await response.json()) as { error: string; code: string };
  expect(response.status, `${url}: ${JSON.stringify(body)}`).toBe(400);
  expect(body).toEqual({ error: expect.any(String), code: 'URL_NOT_ALLOWED' });
  return body.error;
}

// Hosts no agent should be sent to, in the spellings WHATWG URLs allow.
const NEVER = [
  'http://169.254.169.254/latest/meta-data/iam/security-credentials/', // AWS, GCP, Azure metadata
  'http://[::ffff:169.254.169.254]/latest/meta-data/', // the same, IPv4-mapped
  'http://[fd00:ec2::254]/latest/meta-data/', // AWS metadata over IPv6
  'http://metadata.google.internal/computeMetadata/v1/', // GCP metadata by name
  'http://100.100.100.200/latest/meta-data/', // Alibaba metadata (CGNAT range)
  'http://10.0.0.5/admin',
  'http://0x0a.0.0.5/admin', // 10.0.0.5 in hex
  'https://192.168.1.1/',
  'https://172.16.0.1/',
  'http://[fe80::1]/',
  'http://0.0.0.0:8080/',
  'http://router.local/',
  'http://intranet/wiki',
  'https://nas.home.arpa/',
];

describe('directory urls', () => {
  it.each(NEVER)('refuses %s with 400 URL_NOT_ALLOWED, whatever the proof, and lists nothing', async (url) => {
    const message = await expectRefused(url);
    expect(message).toMatch(/public host/);
    // A proof of control of the url does not make it listable either (refused before anything is fetched).
    await expectRefused(url, {}, { proof_token: randomBytes(32).toString('base64url') });
    expect(await listed()).not.toContain(new URL(url).href);
  });

  it('outside production accepts loopback and plain http (a local npm start), as before', async () => {
    for (const url of ['http://127.0.0.1:9740/payinvoice', 'http://[::1]:8080/admin', 'http://localhost:3000/api/demo', 'http://api.example.com/v1']) {
      const response = await register(url);
      expect(response.status, url).toBe(200);
      expect(await listed()).toContain(new URL(url).href);
    }
  });

  it('in production refuses loopback and plain http too; a public https url passes', async () => {
    server.use({ ...server.ctx, config: { ...server.ctx.config, production: true } });
    try {
      for (const url of ['https://127.0.0.1:9740/payinvoice', 'https://[::1]:8080/admin', 'https://localhost/x', 'https://2130706433/x']) {
        expect(await expectRefused(url)).toMatch(/loopback/);
      }
      expect(await expectRefused('http://api.example.com/v1')).toBe('url must use https');
      expect((await register('https://api.example.com/v1/price')).status).toBe(200);
    } finally {
      server.restore();
    }
  });
});
