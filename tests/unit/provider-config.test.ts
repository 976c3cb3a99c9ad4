// LIGHTNING_PROVIDER and each backend's settings: what a missing setting does
// locally (refuse to start, naming it) and in production (a problem the health
// endpoint and the paywall report), and which provider the factory builds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../lib/config.js';
import { createProvider, ProviderConfigError } from '../../lib/lightning/providers/index.js';
import { createMemoryStore } from '../../lib/store/index.js';

const dataDir = mkdtempSync(join(tmpdir(), 'provider-config-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const base = { DATA_DIR: dataDir, L402_SECRET: 'x'.repeat(32) };
const NWC = `nostr+walletconnect://${'a'.repeat(64)}?relay=wss%3A%2F%2Frelay.example&secret=${'b'.repeat(64)}`;

const complete: Record<string, Record<string, string>> = {
  lnbits: { LNBITS_URL: 'https://lnbits.example', LNBITS_API_KEY: 'inkey' },
  phoenixd: { PHOENIXD_URL: 'http://127.0.0.1:9740', PHOENIXD_PASSWORD: 'pw' },
  lnd: { LND_REST_URL: 'https://lnd.example:8080', LND_MACAROON: '0201AB' },
  cln: { CLN_REST_URL: 'https://cln.example:3010', CLN_RUNE: 'rune' },
  nwc: { NWC_URL: NWC },
  blink: { BLINK_API_KEY: 'blink_key' },
};

describe('Lightning backend settings', () => {
  it('locally, a chosen backend with missing settings refuses to start, naming them', () => {
    expect(() => loadConfig({ ...base, LIGHTNING_PROVIDER: 'lnbits', LNBITS_URL: 'https://lnbits.example' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, LIGHTNING_PROVIDER: 'lnbits', LNBITS_URL: 'https://lnbits.example' })).toThrow(
      /Set LNBITS_API_KEY \(needed by LIGHTNING_PROVIDER=lnbits\)/,
    );
    expect(() => loadConfig({ ...base, LIGHTNING_PROVIDER: 'lnd' })).toThrow(/LND_REST_URL, LND_MACAROON/);
  });

  it('in production, missing settings become problems (reported, never guessed)', () => {
    const config = loadConfig({ ...base, NODE_ENV: 'production', LIGHTNING_PROVIDER: 'cln', CLN_REST_URL: 'https://cln.example' });
    expect(config.problems).toContainEqual({ setting: 'CLN_RUNE', message: 'CLN_RUNE (needed by LIGHTNING_PROVIDER=cln)' });
    expect(config.lightning.cln).toBeUndefined();
  });

  it('only the chosen backend is read; network defaults to bitcoin, the dev node is always regtest', () => {
    const config = loadConfig({ ...base, LIGHTNING_PROVIDER: 'lnd', ...complete.lnd, ...complete.lnbits });
    expect(config.lightning).toMatchObject({
      provider: 'lnd',
      network: 'bitcoin',
      timeoutMs: 10_000,
      lnd: { url: 'https://lnd.example:8080', macaroon: '0201ab' },
    });
    expect(config.lightning.lnbits).toBeUndefined();
    expect(loadConfig({ ...base, LIGHTNING_NETWORK: 'signet' }).lightning.network).toBe('regtest');
    expect(loadConfig({ ...base, LIGHTNING_PROVIDER: 'phoenixd', ...complete.phoenixd, LIGHTNING_NETWORK: 'signet' }).lightning.network).toBe('signet');
  });

  it('refuses malformed values: a macaroon that is not hex, a timeout out of bounds, an NWC URL of another scheme', () => {
    expect(() => loadConfig({ ...base, LIGHTNING_PROVIDER: 'lnd', ...complete.lnd, LND_MACAROON: 'not hex!' })).toThrow(/LND_MACAROON/);
    expect(() => loadConfig({ ...base, LIGHTNING_TIMEOUT_MS: '10' })).toThrow(/LIGHTNING_TIMEOUT_MS/);
    expect(() => loadConfig({ ...base, LIGHTNING_PROVIDER: 'nwc', NWC_URL: 'https://wallet.example' })).toThrow(/NWC_URL/);
  });

  it.each(Object.keys(complete))('the factory builds the %s provider from its settings', (name) => {
    const config = loadConfig({ ...base, LIGHTNING_PROVIDER: name, ...complete[name] });
    const provider = createProvider(config.lightning, createMemoryStore());
    expect(provider.name).toBe(name);
    (provider as { close?: () => void }).close?.();
  });

  it("NWC's client is loaded on the first call: a URL it refuses is that call's ProviderConfigError (503 PROVIDER_MISCONFIGURED)", async () => {
    const config = loadConfig({ ...base, LIGHTNING_PROVIDER: 'nwc', NWC_URL: 'nostr+walletconnect://not-a-key?relay=wss%3A%2F%2Frelay.example' });
    const provider = createProvider(config.lightning, createMemoryStore());
    expect(provider.name).toBe('nwc');
    expect(provider.readWebhook).toBeUndefined();
    await expect(provider.createInvoice({ amountMsat: 1_000, memo: 'x' })).rejects.toThrow(ProviderConfigError);
    await expect(provider.balance()).rejects.toMatchObject({ setting: 'NWC_URL' });
    (provider as { close?: () => void }).close?.();
  });

  it('the factory builds the dev node by default and refuses a hand-made config without settings', () => {
    const config = loadConfig(base);
    expect(createProvider(config.lightning, createMemoryStore()).name).toBe('dev');
    expect(() => createProvider({ ...config.lightning, provider: 'lnbits' }, createMemoryStore())).toThrow(ProviderConfigError);
  });
});
