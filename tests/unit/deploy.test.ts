// What a one-click deployment gets: the Deploy button of docs/deploy.md asks for what
// production refuses to run without (or provisions it), and vercel.json is
// valid on Vercel's Hobby plan (crons at most once a day).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig, missingSettings } from '../../lib/config.js';

const guide = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
const vercelJson = JSON.parse(readFileSync(new URL('../../vercel.json', import.meta.url), 'utf8')) as {
  crons: Array<{ path: string; schedule: string }>;
};

function deployButton(): URL {
  const block = /<!-- deploy-button -->\s*\[!\[Deploy with Vercel\]\(https:\/\/vercel\.com\/button\)\]\((\S+)\)\s*<!-- \/deploy-button -->/.exec(guide);
  expect(block, 'docs/deploy.md has the Deploy button between its markers').toBeTruthy();
  return new URL(block![1]!);
}

describe('the Deploy button of docs/deploy.md', () => {
  const url = deployButton();
  const param = (name: string) => url.searchParams.get(name) ?? '';
  const env = param('env').split(',');

  it("is Vercel's clone flow for a GitHub repository, linking back to the deploy guide", () => {
    expect(url.origin + url.pathname).toBe('https://vercel.com/new/clone');
    const repository = param('repository-url');
    expect(repository).toMatch(/^https:\/\/github\.com\/[^/]+\/[^/#?]+$/);
    expect(param('envLink')).toBe(`${repository}/blob/main/docs/deploy.md`);
    expect(guide).toMatch(/^## Deploy to Vercel$/m);
  });

  it('asks for every setting production cannot run without, except those its storage integrations provide', () => {
    const stores = JSON.parse(param('stores')) as Array<{ type: string; integrationSlug: string; productSlug: string }>;
    expect(stores.map((store) => store.integrationSlug).sort()).toEqual(['neon', 'upstash']);
    // What the Upstash integration sets, plus what the button asks for (a backend's own settings come after, as the guide says).
    const provisioned = { VERCEL: '1', KV_REST_API_URL: 'https://example.upstash.io', KV_REST_API_TOKEN: 'token' };
    const asked: Record<string, string> = { L402_SECRET: 'a'.repeat(64), CRON_SECRET: 'b'.repeat(64), LIGHTNING_PROVIDER: 'nwc' };
    expect(env.sort()).toEqual(Object.keys(asked).sort());
    const backend = { NWC_URL: 'nostr+walletconnect://abc?relay=wss://relay.example&secret=00' };
    expect(loadConfig({ ...provisioned, ...asked, ...backend }).problems).toEqual([]);
    // Each setting the button asks for that production requires is named as missing without it.
    for (const key of ['L402_SECRET', 'LIGHTNING_PROVIDER']) {
      const without = { ...provisioned, ...asked, ...backend, [key]: undefined };
      expect(missingSettings(loadConfig(without)).join('\n')).toContain(key);
    }
    // Without the Upstash integration, its settings are what is missing.
    expect(missingSettings(loadConfig({ VERCEL: '1', ...asked, ...backend })).join('\n')).toContain('UPSTASH_REDIS_REST_URL');
    // The crons refuse to run without CRON_SECRET: it is asked for although the paywall would start without it.
    expect(loadConfig({ ...provisioned, ...asked, ...backend }).cron.secret).toBe(asked.CRON_SECRET);
  });

  it('describes each setting it asks for', () => {
    const description = param('envDescription');
    for (const key of env) expect(description).toContain(key);
    expect(description).toMatch(/openssl rand -hex 32/);
  });
});

describe('vercel.json on the Hobby plan', () => {
  // Hobby accepts a cron only if it runs at most once a day: a fixed minute and a fixed hour.
  it.each(vercelJson.crons.map((cron) => [cron.path, cron.schedule]))('%s runs at most once a day (%s)', (path, schedule) => {
    const [minute, hour, dayOfMonth, month, dayOfWeek, ...rest] = schedule.split(/\s+/);
    expect(rest).toEqual([]);
    expect(minute).toMatch(/^([0-9]|[1-5][0-9])$/);
    expect(hour).toMatch(/^([0-9]|1[0-9]|2[0-3])$/);
    expect([dayOfMonth, month, dayOfWeek]).toEqual(['*', '*', '*']);
    expect(path).toMatch(/^\/api\/cron\//);
  });

  it('has both crons, and the deploy guide says how to run payouts every 10 minutes on Pro', () => {
    expect(vercelJson.crons.map((cron) => cron.path).sort()).toEqual(['/api/cron/flush-payments', '/api/cron/payouts']);
    expect(guide).toMatch(/\*\*Pro\*\*: set the payouts cron to `\*\/10 \* \* \* \*`/);
  });
});
