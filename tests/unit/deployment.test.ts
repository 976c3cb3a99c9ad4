// Which configuration and service context the api/ handlers run with
// (lib/service/deployment.ts): built from a config object, once; the instance's
// own deployment for Vercel's `fetch`, the one given for `fetchWith`.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, missingSettings } from '../../lib/config.js';
import { HttpError } from '../../lib/http/errors.js';
import { createServiceContext } from '../../lib/service/context.js';
import { createDeployment, defaultDeployment, deploymentOf, publicBaseUrl, serviceRoute, type Deployment } from '../../lib/service/deployment.js';

const local = () => loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'l402-deployment-')), L402_SECRET: 'd'.repeat(32), BTC_PRICE_SOURCES: 'none' });

describe('createServiceContext', () => {
  it('builds everything from the config object it is given', async () => {
    const config = local();
    const ctx = createServiceContext(config);
    expect(ctx.config).toBe(config);
    expect(ctx.devNode).toBeDefined();
    expect(ctx.provider).toBe(ctx.devNode);
    expect(ctx.events).toBeUndefined();
    // Two contexts of one config share nothing in memory.
    const other = createServiceContext(config);
    await ctx.store.set('k', 'v');
    expect(await other.store.get('k')).toBeNull();
  });

  it('refuses a production config with missing settings: 503 NOT_CONFIGURED naming them', () => {
    const config = loadConfig({ NODE_ENV: 'production', DATA_DIR: mkdtempSync(join(tmpdir(), 'l402-deployment-')) });
    const refused = (() => {
      try {
        createServiceContext(config);
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(HttpError);
    expect(refused).toMatchObject({ status: 503, code: 'NOT_CONFIGURED', extra: { missing: missingSettings(config) } });
  });
});

describe('createDeployment', () => {
  it('builds the context on first use, once', () => {
    const config = local();
    const deployment = createDeployment(config);
    expect(deployment.config()).toBe(config);
    const ctx = deployment.context();
    expect(ctx.config).toBe(config);
    expect(deployment.context()).toBe(ctx);
  });

  it('loads a config given as a function on first use and keeps it; a context that cannot be built answers 503 each time', () => {
    let loads = 0;
    const dataDir = mkdtempSync(join(tmpdir(), 'l402-deployment-'));
    const deployment = createDeployment(() => {
      loads += 1;
      return loadConfig({ DATA_DIR: dataDir, NODE_ENV: 'production' });
    });
    expect(loads).toBe(0);
    expect(() => deployment.context()).toThrow(/not configured/);
    expect(() => deployment.context()).toThrow(/not configured/);
    expect(deployment.config().problems).toContainEqual({ setting: 'L402_SECRET', message: 'L402_SECRET' });
    expect(loads).toBe(1);
  });

  it('deploymentOf runs with the context given, as it is', () => {
    const ctx = createServiceContext(local());
    const deployment = deploymentOf(ctx);
    expect(deployment.context()).toBe(ctx);
    expect(deployment.config()).toBe(ctx.config);
  });
});

describe('serviceRoute', () => {
  const seen: Deployment[] = [];
  const fn = serviceRoute({
    GET(_request, deployment) {
      seen.push(deployment);
      return Response.json({ ok: true });
    },
  });

  it('fetch (what Vercel calls) runs with the instance deployment, the same for every api/ file; fetchWith with the one given', async () => {
    const other = serviceRoute({ GET: (_request, deployment) => (seen.push(deployment), new Response(null, { status: 204 })) });
    const mine = createDeployment(local());
    seen.length = 0;
    expect((await fn.fetch(new Request('http://localhost/x'))).status).toBe(200);
    expect((await other.fetch(new Request('http://localhost/y'))).status).toBe(204);
    expect((await fn.fetchWith(new Request('http://localhost/x'), mine)).status).toBe(200);
    expect((await fn.fetchWith(new Request('http://localhost/x', { method: 'HEAD' }), mine)).status).toBe(200);
    expect(seen).toEqual([defaultDeployment(), defaultDeployment(), mine, mine]);
    expect(seen[0]).toBe(seen[1]);
  });

  it("keeps route()'s shape: 405 with Allow, CORS", async () => {
    const refused = await fn.fetchWith(new Request('http://localhost/x', { method: 'POST' }), createDeployment(local()));
    expect(refused.status).toBe(405);
    expect(refused.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('an environment that does not load', () => {
  it('answers 503 INVALID_CONFIGURATION naming the setting, with Retry-After, never a 500, on every service route', async () => {
    const invoice = (await import('../../api/invoice.js')).default;
    const apis = (await import('../../api/apis.json.js')).default;
    const broken = createDeployment(() => loadConfig({ PORT: 'abc' }));
    for (const answer of [
      await invoice.fetchWith(new Request('http://localhost/api/invoice', { method: 'POST', body: '{"amountSats":1}' }), broken),
      await apis.fetchWith(new Request('http://localhost/api/apis.json'), broken),
    ]) {
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('30');
      expect(await answer.json()).toEqual({
        error: 'The service is misconfigured: Invalid environment: PORT: must be a whole number (digits only), not "abc"',
        code: 'INVALID_CONFIGURATION',
        retryAfter: 30,
      });
    }
  });
});

describe('publicBaseUrl', () => {
  it('is PUBLIC_URL, else where the local server listens; in production only PUBLIC_URL', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'l402-deployment-'));
    const at = (env: Record<string, string>) => {
      const deployment = createDeployment(loadConfig({ DATA_DIR: dataDir, L402_SECRET: 'd'.repeat(32), ...env }));
      deployment.localUrl = 'http://127.0.0.1:3000';
      return publicBaseUrl(deployment);
    };
    expect(at({})).toBe('http://127.0.0.1:3000');
    expect(at({ PUBLIC_URL: 'https://pay.example.com/some/path' })).toBe('https://pay.example.com');
    expect(at({ NODE_ENV: 'production' })).toBeUndefined();
    expect(at({ NODE_ENV: 'production', PUBLIC_URL: 'https://pay.example.com' })).toBe('https://pay.example.com');
  });
});
