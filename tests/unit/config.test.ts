import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { ConfigError, ENV_KEYS, SETTING_DESCRIPTIONS, describeEmbeddedDefaults, describeProblem, loadConfig, missingSettings } from '../../lib/config.js';
import { keepLocalKeys } from '../../scripts/local-keys.js';
import { createDeployment } from '../../lib/service/deployment.js';
import { signEvent } from 'l402-paywall/events';

const dataDir = () => mkdtempSync(join(tmpdir(), 'l402-config-'));
/** A DATA_DIR where an earlier start saved the generated keys: every load of it reads the same ones. */
const keysSavedIn = () => {
  const dir = dataDir();
  keepLocalKeys(loadConfig({ DATA_DIR: dir }));
  return dir;
};

describe('loadConfig', () => {
  it('runs locally on embedded defaults; npm start keeps the generated secret and node key across restarts', () => {
    const dir = dataDir();
    const read = loadConfig({ DATA_DIR: dir });
    // Reading the environment writes nothing: the keys made for this load are listed, not kept.
    expect(existsSync(dir) && readdirSync(dir)).toEqual([]);
    expect(read.unsavedKeys.map((unsaved) => unsaved.file).sort()).toEqual([join(dir, 'dev-node-key'), join(dir, 'l402-secret')]);
    expect(describeEmbeddedDefaults(read).join('\n')).toContain('L402_SECRET: generated now, kept only in memory');
    const first = keepLocalKeys(read);
    expect(first.production).toBe(false);
    expect(first.problems).toEqual([]);
    expect(first.unsavedKeys).toEqual([]);
    expect(first.l402.secretSource).toBe('generated');
    expect(first.l402.secrets[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(first.lightning.devNodePrivateKey).toMatch(/^[0-9a-f]{64}$/);
    const second = loadConfig({ DATA_DIR: dir });
    expect(second.l402.secrets).toEqual(first.l402.secrets);
    expect(second.l402.secretSource).toBe('saved');
    expect(second.lightning.devNodePrivateKey).toBe(first.lightning.devNodePrivateKey);
    expect(readFileSync(join(dir, 'l402-secret'), 'utf8').trim()).toBe(first.l402.secrets[0]);
    expect(describeEmbeddedDefaults(first).join('\n')).toMatch(/in memory[\s\S]*dev node[\s\S]*generated/);
  });

  it('runs production unless NODE_ENV is unset, development or test (and VERCEL is unset), and says why', () => {
    const mode = (env: Record<string, string>) => {
      const { production, modeReason } = loadConfig({ DATA_DIR: dataDir(), ...env });
      return { production, modeReason };
    };
    const rule = 'only an unset NODE_ENV, development or test runs locally';
    expect(mode({})).toEqual({ production: false, modeReason: `NODE_ENV is unset; ${rule}` });
    expect(mode({ NODE_ENV: '' })).toEqual({ production: false, modeReason: `NODE_ENV is unset; ${rule}` });
    expect(mode({ NODE_ENV: 'development' })).toEqual({ production: false, modeReason: `NODE_ENV=development; ${rule}` });
    expect(mode({ NODE_ENV: 'test' })).toEqual({ production: false, modeReason: `NODE_ENV=test; ${rule}` });
    for (const value of ['production', 'Production', 'prod', 'production ', 'staging', 'Development', 'dev'])
      expect(mode({ NODE_ENV: value })).toEqual({ production: true, modeReason: `NODE_ENV=${JSON.stringify(value)}; ${rule}` });
    expect(mode({ VERCEL: '1', NODE_ENV: 'development' })).toEqual({ production: true, modeReason: 'VERCEL is set' });
  });

  it('refuses to guess in production and names every missing setting', () => {
    const config = loadConfig({ VERCEL: '1', DATA_DIR: dataDir() });
    expect(config.production).toBe(true);
    expect(missingSettings(config).join(' | ')).toMatch(/UPSTASH_REDIS_REST_URL.*L402_SECRET.*LIGHTNING_PROVIDER/);
    expect(config.problems.map((problem) => problem.setting)).toEqual(['UPSTASH_REDIS_REST_URL', 'L402_SECRET', 'LIGHTNING_PROVIDER']);
    expect(describeProblem(config.problems[1]!)).toBe('L402_SECRET: a random string of at least 32 characters: openssl rand -hex 32');
    expect(config.l402.secrets).toEqual([]);
  });

  it('says what is wrong with a number setting, in words', () => {
    const message = (env: Record<string, string>) => {
      try {
        loadConfig({ DATA_DIR: dataDir(), ...env });
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(message({ PORT: 'abc' })).toBe('Invalid environment: PORT: must be a whole number (digits only), not "abc"');
    expect(message({ PORT: '1.5' })).toBe('Invalid environment: PORT: must be a whole number (digits only), not "1.5"');
    expect(message({ PORT: '0' })).toBe('Invalid environment: PORT: must be at least 1');
    expect(message({ PORT: '70000' })).toBe('Invalid environment: PORT: must be at most 65535');
    expect(message({ PAYOUT_MAX_FEE_PPM: '-3' })).toBe('Invalid environment: PAYOUT_MAX_FEE_PPM: must be a whole number (digits only), not "-3"');
    expect(message({ PORT: ' 8080 ' })).toBe('accepted');
    expect(loadConfig({ DATA_DIR: dataDir(), PORT: '8080', PAYOUT_MAX_FEE_PPM: '0' })).toMatchObject({ server: { port: 8080 } });
  });

  it('takes L402_SECRET and rotation secrets, newest first', () => {
    const config = loadConfig({ L402_SECRET: 'n'.repeat(32), L402_SECRET_PREVIOUS: `${'o'.repeat(32)}, ${'p'.repeat(32)}` });
    expect(config.l402.secrets).toEqual(['n'.repeat(32), 'o'.repeat(32), 'p'.repeat(32)]);
  });

  it('accepts Vercel KV names for Upstash', () => {
    const config = loadConfig({ KV_REST_API_URL: 'https://example.upstash.io', KV_REST_API_TOKEN: 't', L402_SECRET: 's'.repeat(32) });
    expect(config.store.upstash).toEqual({ url: 'https://example.upstash.io', token: 't' });
  });

  it('audit events: both EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET or neither; https outside development; a whsec_ secret of 24 to 64 bytes', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const local = { L402_SECRET: 's'.repeat(32), DATA_DIR: dataDir() };
    expect(loadConfig(local).events).toBeUndefined();
    expect(loadConfig({ ...local, EVENTS_WEBHOOK_URL: 'http://127.0.0.1:9000/hook', EVENTS_WEBHOOK_SECRET: secret }).events).toEqual({
      webhookUrl: 'http://127.0.0.1:9000/hook',
      webhookSecret: secret,
    });
    expect(() => loadConfig({ ...local, EVENTS_WEBHOOK_URL: 'https://hooks.example.com/l402' })).toThrow(/both EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET/);
    expect(() => loadConfig({ ...local, EVENTS_WEBHOOK_SECRET: secret })).toThrow(/both/);
    expect(() => loadConfig({ ...local, EVENTS_WEBHOOK_URL: 'https://hooks.example.com/l402', EVENTS_WEBHOOK_SECRET: 'hunter2' })).toThrow(/whsec_/);
    expect(() =>
      loadConfig({ ...local, EVENTS_WEBHOOK_URL: 'https://hooks.example.com/l402', EVENTS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(8).toString('base64')}` }),
    ).toThrow(/24 to 64 bytes/);
    expect(() => loadConfig({ ...local, EVENTS_WEBHOOK_URL: 'ftp://hooks.example.com/', EVENTS_WEBHOOK_SECRET: secret })).toThrow(/https/);
    expect(() => loadConfig({ ...local, NODE_ENV: 'production', EVENTS_WEBHOOK_URL: 'http://hooks.example.com/', EVENTS_WEBHOOK_SECRET: secret })).toThrow(
      /https/,
    );
    expect(
      loadConfig({ ...local, NODE_ENV: 'production', EVENTS_WEBHOOK_URL: 'https://hooks.example.com/', EVENTS_WEBHOOK_SECRET: secret }).events?.webhookUrl,
    ).toBe('https://hooks.example.com/');
  });

  it('EVENTS_WEBHOOK_SECRET: accepted exactly when the signer accepts it (one rule), refused at load with how to make one', () => {
    const local = { L402_SECRET: 's'.repeat(32), DATA_DIR: dataDir(), EVENTS_WEBHOOK_URL: 'http://127.0.0.1:9000/hook' };
    const padded = Buffer.alloc(32, 7).toString('base64'); // 44 characters, one = of padding
    const candidates = [
      `whsec_${padded}`,
      `whsec_${padded.replace(/=+$/, '')}`, // the padding left out: passed the old check, and the signer refused it
      `whsec_${Buffer.alloc(25, 1).toString('base64').replace(/=+$/, '')}`,
      `whsec_${Buffer.alloc(24, 0xfb).toString('base64url')}`,
      `whsec_${Buffer.alloc(24, 0xfb).toString('base64')}`,
      `whsec_${Buffer.alloc(8).toString('base64')}`,
      `whsec_${Buffer.alloc(65).toString('base64')}`,
      'whsec_',
      'hunter2',
    ];
    for (const secret of candidates) {
      let signed = true;
      try {
        signEvent('{}', 'msg_1', secret);
      } catch {
        signed = false;
      }
      let loaded: string | undefined;
      try {
        loaded = loadConfig({ ...local, EVENTS_WEBHOOK_SECRET: secret }).events?.webhookSecret;
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        expect((error as Error).message).toMatch(/^Invalid environment: EVENTS_WEBHOOK_SECRET: .*; echo "whsec_\$\(openssl rand -base64 32\)" makes one/);
      }
      expect({ secret, loaded: loaded !== undefined }).toEqual({ secret, loaded: signed });
    }
    expect(() => loadConfig({ ...local, EVENTS_WEBHOOK_SECRET: `whsec_${padded.replace(/=+$/, '')}` })).toThrow(/not base64/);
  });

  it('explains invalid settings instead of running with them', () => {
    expect(() => loadConfig({ L402_SECRET: 'short' })).toThrow(/at least 32 characters/);
    expect(() => loadConfig({ L402_TOKEN_TTL_SECONDS: 'soon' })).toThrow(ConfigError);
    expect(() => loadConfig({ LIGHTNING_PROVIDER: 'carrier-pigeon' })).toThrow(/LIGHTNING_PROVIDER/);
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT/);
  });

  it('treats an empty value (FOO= as copied from .env.example) as unset', () => {
    const dir = keysSavedIn();
    const empty = loadConfig({
      DATA_DIR: dir,
      L402_SECRET: '',
      L402_TOKEN_TTL_SECONDS: '',
      LIGHTNING_PROVIDER: '',
      DEV_NODE_PRIVATE_KEY: ' ',
      UPSTASH_REDIS_REST_URL: '',
      PORT: '',
      BTC_PRICE_SOURCES: '',
      DATABASE_URL: '',
      CRON_SECRET: '',
      VERCEL: '',
    });
    expect(empty).toEqual(loadConfig({ DATA_DIR: dir }));
    expect(empty.production).toBe(false);
    expect(empty.l402.tokenTtlSeconds).toBe(3600);
    expect(empty.demo.priceSources).toEqual(['coinbase', 'kraken', 'coingecko']);
    expect(empty.cron.secret).toBeUndefined();
  });

  it('.env.example lists every setting and, copied as it is, loads the defaults', () => {
    const example = parseEnv(readFileSync(new URL('../../.env.example', import.meta.url), 'utf8'));
    // Set by the platform, not by hand.
    const platform = ['NODE_ENV', 'VERCEL', 'VERCEL_PROJECT_PRODUCTION_URL'];
    expect(Object.keys(example).sort()).toEqual(ENV_KEYS.filter((key) => !platform.includes(key)).sort());
    // Each declared once, with what it means.
    expect(new Set(ENV_KEYS).size).toBe(ENV_KEYS.length);
    for (const { env, description } of SETTING_DESCRIPTIONS) expect(description.length, env).toBeGreaterThan(10);
    const dir = keysSavedIn();
    expect(loadConfig({ ...example, DATA_DIR: dir })).toEqual(loadConfig({ DATA_DIR: dir }));
  });
});

describe('the service in production without configuration', () => {
  it('fails closed: the paywall and the invoice endpoint answer 503 naming what is missing', async () => {
    const deployment = createDeployment(loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir() }));
    const { default: btcPrice } = await import('../../api/demo/btc-price.js');
    const { default: invoice } = await import('../../api/invoice.js');
    for (const response of [
      await btcPrice.fetchWith(new Request('http://localhost/api/demo/btc-price'), deployment),
      await invoice.fetchWith(new Request('http://localhost/api/invoice', { method: 'POST', body: '{"amountSats":1}' }), deployment),
    ]) {
      expect(response.status).toBe(503);
      expect(response.headers.get('www-authenticate')).toBeNull();
      const body = (await response.json()) as { code: string; error: string };
      expect(body.code).toBe('NOT_CONFIGURED');
      expect(body.error).toMatch(/L402_SECRET/);
      expect(body.error).toMatch(/UPSTASH_REDIS_REST_URL/);
    }
  });
});
