// The library as its users get it, proven from the packed tarball (never the
// source tree): `npm pack` once, then fresh copies of the fixture apps in
// tests/fixtures/packed-* install it the way users do (npm, registry cache
// allowed), in a temporary directory:
// - package checks: the tarball's contents, publint, are-the-types-wrong
//   (ESM-only profile), the footprint of an install, edge-safe entries as
//   built, the core's gzipped size;
// - a consumer file type-checks under `bundler` (strict off) and `nodenext` (strict);
// - the paid flow (402 -> pay with the dev wallet -> 200 -> the same
//   credential refused) on a plain node:http server, Express and Hono (its
//   middleware and withL402), in Vercel's edge-runtime, workerd (miniflare),
//   Deno and Bun, and in a Next.js App Router app (next build without
//   L402_SECRET or managed mode's settings, next start with the secret) on the
//   Node and edge runtimes; through each of those adapters, what follows the
//   handler (proveServeStep): onPaid once per paid answer, the receipt on a
//   Payment credential's success and not on an error answer, the use given
//   back when the handler throws or answers 500;
// - managed mode (l402-paywall/managed) in that app on both runtimes: it
//   builds without its settings and answers 503 NOT_CONFIGURED naming them;
// - the package README's Next.js recipe, written into that app from the README
//   as pasted (readmeRecipe): under next start (production) its dev node sells
//   nothing (503 DEV_NODE_IN_PRODUCTION) and its dev wallet refuses; under next
//   start with NODE_ENV=test the packed command line pays /api/hello with
//   --dev and pays a session on /api/generate with --session (opened,
//   streamed, closed, refunded); under next dev `npx l402-paywall --dev` pays
//   on the first try;
// - the other way round, in the same Next.js app: route handlers on the Node
//   and edge runtimes pay a paid route of this repository's local service
//   with fetchWithL402 (an agent inside a Next.js app);
// - the packed client's destination policy and time limit, and the packed
//   command line's, against hostile servers.
// The pack, the installs and the Next.js build are started with the run by
// tests/package/prepare.ts (the `package` project's globalSetup) and happen
// beside the other suites; each test waits for the step it needs.
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { join } from 'node:path';
import { Challenge as MppChallenge, Credential as MppCredential, Receipt as MppReceipt } from 'mppx';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { decodeInvoice } from 'l402-paywall/lightning';
import {
  LIBRARY_DIR,
  REPO_DIR,
  awaitStep,
  cleanEnv,
  coreBundleSize,
  freePort,
  installedPackages,
  run,
  startServer,
  stepTimings,
  type PackedLibrary,
  type RunningServer,
} from '../support/packed.js';
import { nextBuildEnv, type PACKED_FIXTURES } from './prepare.js';
import type { Database } from '../../lib/db/index.js';
import { useDevServer } from '../support/server.js';
import { startHostileServer, type HostileServer } from '../../packages/l402-paywall/tests/support/hostile-server.js';

type Fixture = (typeof PACKED_FIXTURES)[number];

/** What an install of the library alone may add (the library included). */
const MAX_PACKAGES_ADDED = 15;
const MAX_CORE_GZIP_BYTES = 25 * 1024;
/** Parts of the hosted service that must never come with the library. */
const SERVICE_ONLY = [
  'pg',
  '@electric-sql/pglite',
  '@neondatabase/serverless',
  'hono',
  '@hono/node-server',
  'qrcode',
  '@upstash/redis',
  '@upstash/ratelimit',
  '@vercel/functions',
  '@getalby/sdk',
  'ws',
  'path-to-regexp',
];

const WORK = inject('packedWork');
const SECRET = inject('packedSecret');
const MINUTE = 60_000;
const servers: RunningServer[] = [];
const startedAt = Date.now();

const packedLibrary = () => awaitStep<PackedLibrary>(WORK, 'pack');
const installed = (fixture: Fixture) => awaitStep<string>(WORK, `install-${fixture}`);

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  console.log(
    `packed-tarball suite: ${((Date.now() - startedAt) / 1000).toFixed(0)} s in its worker; preparation steps so far: ${stepTimings(WORK).join(', ')}`,
  );
}, 2 * MINUTE);

async function serve(
  command: string,
  args: string[],
  cwd: string,
  options: { ready?: RegExp; url?: string; env?: Record<string, string> } = {},
): Promise<string> {
  const { env, ...rest } = options;
  const server = await startServer(command, args, { cwd, env: cleanEnv({ L402_SECRET: SECRET, ...env }), ...rest });
  servers.push(server);
  return server.url;
}

interface Challenge {
  code: string;
  macaroon: string;
  invoice: string;
  priceSats: number;
}

/** 402 -> a made-up preimage refused -> pay with the dev wallet -> 200 -> the same credential refused. */
async function provePaidFlow(paidUrl: string, payUrl: string): Promise<void> {
  const first = await fetch(paidUrl);
  expect(first.status).toBe(402);
  const challenge = (await first.json()) as Challenge;
  expect(first.headers.get('www-authenticate')).toContain(`L402 macaroon="${challenge.macaroon}", invoice="${challenge.invoice}"`);
  expect(challenge).toMatchObject({ code: 'PAYMENT_REQUIRED', priceSats: 21 });
  expect(decodeInvoice(challenge.invoice).amountMsat).toBe(21_000);

  const unpaid = await fetch(paidUrl, { headers: { authorization: `L402 ${challenge.macaroon}:${'00'.repeat(32)}` } });
  expect(unpaid.status).toBe(402);
  expect(((await unpaid.json()) as Challenge).code).toBe('PREIMAGE_MISMATCH');

  const payment = await fetch(payUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ invoice: challenge.invoice }),
  });
  expect(payment.status).toBe(200);
  const { preimage } = (await payment.json()) as { preimage: string };
  expect(preimage).toMatch(/^[0-9a-f]{64}$/);

  const authorization = `L402 ${challenge.macaroon}:${preimage}`;
  const paid = await fetch(paidUrl, { headers: { authorization } });
  expect(paid.status).toBe(200);
  expect(paid.headers.get('cache-control')).toContain('no-store');
  expect(await paid.json()).toMatchObject({ answer: 42 });

  const replay = await fetch(paidUrl, { headers: { authorization } });
  expect(replay.status).toBe(402);
  expect(((await replay.json()) as Challenge).code).toBe('TOKEN_ALREADY_USED');
}

/**
 * The same route through the Payment scheme, as a peer implementation (mppx)
 * meets it: mppx reads the 402's Payment challenge (Lightning charge, the same
 * invoice as the L402 challenge), a credential mppx builds is served 200 with a
 * Payment-Receipt mppx reads, and the same credential again is refused.
 */
async function provePaymentScheme(paidUrl: string, payUrl: string): Promise<void> {
  const first = await fetch(paidUrl);
  expect(first.status).toBe(402);
  const body = (await first.clone().json()) as Challenge & { paymentHash: string };
  const challenge = MppChallenge.fromResponse(first);
  expect(challenge).toMatchObject({ method: 'lightning', intent: 'charge' });
  expect(challenge.request).toMatchObject({ amount: '21', currency: 'sat', methodDetails: { invoice: body.invoice, network: 'regtest' } });
  const payment = await fetch(payUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoice: body.invoice }) });
  const { preimage } = (await payment.json()) as { preimage: string };
  const authorization = MppCredential.serialize(MppCredential.from({ challenge, payload: { preimage } }));
  const paid = await fetch(paidUrl, { headers: { authorization } });
  expect(paid.status).toBe(200);
  expect(await paid.json()).toMatchObject({ answer: 42 });
  expect(MppReceipt.fromResponse(paid)).toMatchObject({ method: 'lightning', status: 'success', challengeId: challenge.id, reference: body.paymentHash });
  const replay = await fetch(paidUrl, { headers: { authorization } });
  expect(replay.status).toBe(402);
}

interface OnPaidCall {
  paymentHash: string;
  path: string;
  status: number;
}

/** The onPaid calls a fixture recorded for one payment. */
async function onPaidCallsFor(onPaidUrl: string, paymentHash: string): Promise<OnPaidCall[]> {
  const calls = (await (await fetch(onPaidUrl)).json()) as OnPaidCall[];
  return calls.filter((call) => call.paymentHash === paymentHash);
}

/** Asks `url` with `authorization` until it answers 200: a release may land just after the failed answer went out. */
async function servedAgain(url: string, authorization: string): Promise<Response> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const answer = await fetch(url, { headers: { authorization } });
    if (answer.status !== 402 || Date.now() > deadline) return answer;
    await answer.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** An L402 credential for `url`, paid with the fixture's dev wallet. */
async function buyL402(url: string, payUrl: string): Promise<{ authorization: string; paymentHash: string }> {
  const challenge = (await (await fetch(url)).json()) as Challenge & { paymentHash: string };
  const payment = await fetch(payUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ invoice: challenge.invoice }),
  });
  const { preimage } = (await payment.json()) as { preimage: string };
  return { authorization: `L402 ${challenge.macaroon}:${preimage}`, paymentHash: challenge.paymentHash };
}

/** A Payment credential (built by mppx) for `url`, paid with the fixture's dev wallet. */
async function buyPayment(url: string, payUrl: string): Promise<{ authorization: string; paymentHash: string }> {
  const first = await fetch(url);
  const body = (await first.clone().json()) as Challenge & { paymentHash: string };
  const challenge = MppChallenge.fromResponse(first);
  const payment = await fetch(payUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoice: body.invoice }) });
  const { preimage } = (await payment.json()) as { preimage: string };
  return { authorization: MppCredential.serialize(MppCredential.from({ challenge, payload: { preimage } })), paymentHash: body.paymentHash };
}

/**
 * What the paywall does after the handler, the same through every adapter:
 * onPaid runs once per paid answer (a 4xx included) and never for a failed
 * one; a Payment credential's answer carries its receipt below 400 and not on
 * a 400; a handler that throws or answers 500 gives the use back, so the same
 * credential is served on the next try (and then no more). `flakyUrl` answers
 * as `?fail=` asks (throw, 500, 400), `onPaidUrl` lists the onPaid calls.
 */
async function proveServeStep(urls: { paid: string; flaky: string; onPaid: string; pay: string }): Promise<void> {
  const flaky = (fail: string) => `${urls.flaky}${urls.flaky.includes('?') ? '&' : '?'}fail=${fail}`;
  const flakyPath = new URL(urls.flaky).pathname;

  const bought = await buyL402(urls.paid, urls.pay);
  const paid = await fetch(urls.paid, { headers: { authorization: bought.authorization } });
  expect(paid.status).toBe(200);
  await paid.body?.cancel();
  await vi.waitFor(async () => expect(await onPaidCallsFor(urls.onPaid, bought.paymentHash)).toHaveLength(1));
  // Once: not again a moment later.
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(await onPaidCallsFor(urls.onPaid, bought.paymentHash)).toEqual([{ paymentHash: bought.paymentHash, path: new URL(urls.paid).pathname, status: 200 }]);

  for (const fail of ['throw', '500']) {
    const { authorization, paymentHash } = await buyL402(urls.flaky, urls.pay);
    const failed = await fetch(flaky(fail), { headers: { authorization } });
    expect(failed.status, fail).toBe(500);
    await failed.body?.cancel();
    const retried = await servedAgain(urls.flaky, authorization);
    expect(retried.status, fail).toBe(200);
    expect(await retried.json()).toMatchObject({ answer: 42 });
    const replay = await fetch(urls.flaky, { headers: { authorization } });
    expect(replay.status, fail).toBe(402);
    expect(((await replay.json()) as Challenge).code).toBe('TOKEN_ALREADY_USED');
    await vi.waitFor(async () => expect(await onPaidCallsFor(urls.onPaid, paymentHash)).toHaveLength(1));
    expect(await onPaidCallsFor(urls.onPaid, paymentHash)).toEqual([{ paymentHash, path: flakyPath, status: 200 }]);
  }

  const refusedInput = await buyPayment(urls.flaky, urls.pay);
  const badInput = await fetch(flaky('400'), { headers: { authorization: refusedInput.authorization } });
  expect(badInput.status).toBe(400);
  expect(badInput.headers.get('payment-receipt')).toBeNull();
  expect(badInput.headers.get('cache-control')).toContain('no-store');
  await badInput.body?.cancel();
  await vi.waitFor(async () => expect(await onPaidCallsFor(urls.onPaid, refusedInput.paymentHash)).toHaveLength(1));
  expect(await onPaidCallsFor(urls.onPaid, refusedInput.paymentHash)).toEqual([{ paymentHash: refusedInput.paymentHash, path: flakyPath, status: 400 }]);

  const good = await buyPayment(urls.flaky, urls.pay);
  const served = await fetch(urls.flaky, { headers: { authorization: good.authorization } });
  expect(served.status).toBe(200);
  expect(MppReceipt.fromResponse(served)).toMatchObject({ status: 'success', reference: good.paymentHash });
  expect(served.headers.get('cache-control')).toContain('no-store');
  await vi.waitFor(async () => expect(await onPaidCallsFor(urls.onPaid, good.paymentHash)).toHaveLength(1));
}

describe('the packed tarball', () => {
  it(
    'holds each exported entry built, with its declarations, and no sources or tests',
    async () => {
      const packed = await packedLibrary();
      const manifest = JSON.parse(readFileSync(join(LIBRARY_DIR, 'package.json'), 'utf8')) as {
        exports: Record<string, string | { types: string; default: string }>;
      };
      for (const [subpath, target] of Object.entries(manifest.exports)) {
        if (typeof target === 'string') continue; // ./package.json, ./proxy-config.schema.json
        expect(packed.files, subpath).toContain(target.default.replace(/^\.\//, ''));
        expect(packed.files, subpath).toContain(target.types.replace(/^\.\//, ''));
      }
      expect(packed.files).toContain('package.json');
      expect(packed.files.filter((file) => !file.startsWith('dist/') && !/^(package\.json|README\.md|LICENSE|proxy-config\.schema\.json)$/.test(file))).toEqual(
        [],
      );
      expect(packed.files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
    },
    3 * MINUTE,
  );

  it(
    'publint finds nothing to fix (strict)',
    async () => {
      const packed = await packedLibrary();
      const { publint } = await import('publint');
      const { formatMessage } = await import('publint/utils');
      const bytes = readFileSync(packed.tarball);
      const result = await publint({
        pack: { tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer },
        strict: true,
      });
      expect(result.messages.map((message) => `${message.type}: ${formatMessage(message, result.pkg) ?? message.code}`)).toEqual([]);
    },
    3 * MINUTE,
  );

  it(
    'are-the-types-wrong finds no problem under the ESM-only profile',
    async () => {
      const packed = await packedLibrary();
      const attw = join(REPO_DIR, 'node_modules/@arethetypeswrong/cli/dist/index.js');
      const { code, output } = await run(process.execPath, [attw, packed.tarball, '--profile', 'esm-only', '--no-color'], {
        cwd: REPO_DIR,
        allowFailure: true,
      });
      expect(code, output).toBe(0);
      // Every entry was analysed and resolved for ESM consumers and bundlers.
      const manifest = JSON.parse(readFileSync(join(LIBRARY_DIR, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
      for (const subpath of Object.keys(manifest.exports)) expect(output).toContain(`"l402-paywall${subpath.slice(1)}"`);
      expect(output).not.toMatch(/node16 \(from ESM\): (?!🟢)|bundler: (?!🟢)/);
    },
    3 * MINUTE,
  );

  it(
    `installing it into an empty project adds at most ${MAX_PACKAGES_ADDED} packages, nothing of the hosted service`,
    async () => {
      const packages = installedPackages(await installed('packed-consumer'));
      expect(packages).toContain('l402-paywall');
      expect(packages.length, packages.join(', ')).toBeLessThanOrEqual(MAX_PACKAGES_ADDED);
      expect(packages.filter((name) => SERVICE_ONLY.includes(name))).toEqual([]);
    },
    3 * MINUTE,
  );

  it(
    'each entry but l402-paywall/node, as built, bundles for the browser with no Node built-in',
    async () => {
      const { build } = await import('esbuild');
      const project = await installed('packed-consumer');
      const manifest = JSON.parse(readFileSync(join(LIBRARY_DIR, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
      // l402-paywall/node and l402-paywall/mcp (the MCP server on stdio) are for Node alone.
      const entries = Object.keys(manifest.exports).filter((subpath) => !['./node', './mcp', './package.json', './proxy-config.schema.json'].includes(subpath));
      expect(entries.length).toBeGreaterThanOrEqual(8);
      for (const subpath of entries) {
        const specifier = `l402-paywall${subpath.slice(1)}`;
        const found: string[] = [];
        await build({
          stdin: { contents: `export * from '${specifier}';`, resolveDir: project, loader: 'js' },
          bundle: true,
          write: false,
          format: 'esm',
          platform: 'browser',
          logLevel: 'silent',
          // Optional peers, not installed here (the source-level test in edge-safe.test.ts bundles them in).
          external: ['ws', '@getalby/sdk', '@upstash/redis'],
          plugins: [
            {
              name: 'node-builtins',
              setup(b) {
                b.onResolve(
                  { filter: /^node:|^(fs|path|crypto|http|https|net|tls|stream|events|zlib|buffer|url|util|os|dns|child_process|worker_threads|module)$/ },
                  (args) => {
                    found.push(`${args.path} (from ${args.importer})`);
                    return { path: args.path, external: true };
                  },
                );
              },
            },
          ],
        });
        expect(found, specifier).toEqual([]);
      }
    },
    3 * MINUTE,
  );

  it(
    'the core (withL402 and verification) bundles to at most 25 KB minified and gzipped',
    async () => {
      const { gzippedBytes } = await coreBundleSize(await installed('packed-consumer'));
      expect(gzippedBytes).toBeGreaterThan(1000);
      expect(gzippedBytes).toBeLessThanOrEqual(MAX_CORE_GZIP_BYTES);
    },
    3 * MINUTE,
  );
});

describe('a consumer type-checks against the packed declarations', () => {
  const tsc = join(REPO_DIR, 'node_modules/typescript/bin/tsc');
  for (const config of ['tsconfig.bundler.json', 'tsconfig.nodenext.json']) {
    it(
      config === 'tsconfig.bundler.json' ? 'moduleResolution bundler, strict off' : 'moduleResolution nodenext, strict, library declarations checked',
      async () => {
        const project = await installed('packed-consumer');
        const { code, output } = await run(process.execPath, [tsc, '-p', config, '--pretty', 'false'], { cwd: project, allowFailure: true });
        expect(output).toBe('');
        expect(code).toBe(0);
      },
      3 * MINUTE,
    );
  }
});

describe('the packed client, command line against hostile servers', () => {
  let hostile: HostileServer;
  beforeAll(async () => {
    hostile = await startHostileServer();
  });
  afterAll(() => hostile?.close());

  it(
    "fetchWithL402 with l402-paywall/node's nodeDestinations refuses loopback and a redirect into it; timeoutMs ends a trickle",
    async () => {
      const project = await installed('packed-consumer');
      const script = `
        import { DestinationRefused, fetchWithL402 } from 'l402-paywall/client';
        import { nodeDestinations } from 'l402-paywall/node';
        const wallet = { payInvoice() { throw new Error('nothing to pay'); } };
        const outcome = (work) => work.then((r) => 'HTTP ' + r.status, (e) => (e instanceof DestinationRefused ? e.code + ' ' + e.addressKind : e.name));
        const [base] = process.argv.slice(1);
        const results = [
          await outcome(fetchWithL402(base + '/secret', undefined, { wallet, maxPriceSats: 1, destinations: nodeDestinations() })),
          await outcome(fetchWithL402('http://localhost:' + new URL(base).port + '/secret', undefined, { wallet, maxPriceSats: 1, destinations: nodeDestinations() })),
          await outcome(fetchWithL402(base + '/redirect?to=' + encodeURIComponent('http://[::ffff:127.0.0.1]:' + new URL(base).port + '/secret'), undefined, { wallet, maxPriceSats: 1, destinations: nodeDestinations({ allowPrivate: [base] }) })),
          await outcome(fetchWithL402(base + '/trickle', undefined, { wallet, maxPriceSats: 1, timeoutMs: 500 }).then((r) => r.text())),
        ];
        console.log(JSON.stringify(results));`;
      const { output } = await run(process.execPath, ['--input-type=module', '-e', script, hostile.url], { cwd: project, timeoutMs: MINUTE });
      expect(JSON.parse(output.trim().split('\n').at(-1)!)).toEqual([
        'DESTINATION_REFUSED loopback',
        'DESTINATION_REFUSED loopback',
        'DESTINATION_REFUSED loopback',
        'TimeoutError',
      ]);
      expect(hostile.requests.filter((path) => path === '/secret')).toEqual([]);
    },
    3 * MINUTE,
  );

  it(
    'the l402-paywall bin ends a trickling answer at --timeout-seconds with exit 5',
    async () => {
      const bin = join(await installed('packed-consumer'), 'node_modules/.bin/l402-paywall');
      const { code, output } = await run(bin, [`${hostile.url}/trickle`, '--timeout-seconds', '1'], {
        cwd: LIBRARY_DIR,
        allowFailure: true,
        timeoutMs: MINUTE,
      });
      expect(code, output).toBe(5);
      expect(output).toContain(`no complete answer from ${hostile.url} within 1 s`);
    },
    3 * MINUTE,
  );
});

describe('the packed proxy: `npx l402-paywall proxy <upstream> --price-sats 2 --dev`', () => {
  it(
    'answers an unpaid request 402 unforwarded; paid by the packed `l402-paywall --dev`, the request reaches the upstream once, intact, without the credential; the same credential again is refused unforwarded',
    async () => {
      const project = await installed('packed-consumer');
      const received: { method?: string; url?: string; headers: Record<string, unknown>; body: string }[] = [];
      const upstream = createHttpServer((request, response) => {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk));
        request.on('end', () => {
          received.push({ method: request.method, url: request.url, headers: request.headers, body });
          response.writeHead(201, { 'content-type': 'application/json', 'x-upstream': 'yes' });
          response.end(JSON.stringify({ method: request.method, url: request.url, body }));
        });
      });
      await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
      try {
        const upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;
        const port = await freePort();
        const proxy = await serve(
          'npx',
          ['l402-paywall', 'proxy', upstreamUrl, '--price-sats', '2', '--dev', '--port', String(port), '--host', '127.0.0.1'],
          project,
          {
            ready: /uses and sessions: .*\n/,
            url: `http://127.0.0.1:${port}`,
          },
        );

        const unpaid = await fetch(`${proxy}/echo`, { method: 'POST', body: 'unpaid' });
        expect(unpaid.status).toBe(402);
        expect(received).toHaveLength(0);

        const bin = join(project, 'node_modules/.bin/l402-paywall');
        const paid = await run(bin, ['--dev', proxy, '-X', 'PUT', '-d', '{"n":1}', '-H', 'X-Kept: yes', `${proxy}/echo?a=b`], {
          cwd: project,
          allowFailure: true,
          timeoutMs: MINUTE,
        });
        expect(paid.code, paid.output).toBe(0);
        expect(paid.output).toContain('paid 2 sats');
        expect(received).toHaveLength(1);
        expect(received[0]).toMatchObject({ method: 'PUT', url: '/echo?a=b', body: '{"n":1}' });
        expect(received[0]!.headers['x-kept']).toBe('yes');
        expect(received[0]!.headers.authorization).toBeUndefined();

        // One credential by hand (the dev node's pay route on the proxy), spent once, then refused unforwarded.
        const { macaroon, invoice } = (await (await fetch(`${proxy}/echo`)).json()) as { macaroon: string; invoice: string };
        const pay = await fetch(`${proxy}/api/dev/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoice }) });
        const { preimage } = (await pay.json()) as { preimage: string };
        const authorization = `L402 ${macaroon}:${preimage}`;
        const served = await fetch(`${proxy}/echo`, { headers: { authorization } });
        expect(served.status).toBe(201);
        expect(served.headers.get('x-upstream')).toBe('yes');
        expect(received).toHaveLength(2);
        const again = await fetch(`${proxy}/echo`, { headers: { authorization } });
        expect(again.status).toBe(402);
        expect(((await again.json()) as { code: string }).code).toBe('TOKEN_ALREADY_USED');
        expect(received).toHaveLength(2);
      } finally {
        await new Promise((resolve) => upstream.close(resolve));
      }
    },
    3 * MINUTE,
  );
});

describe('the paid flow on Node servers, from the packed library, in both schemes, and what follows the handler', () => {
  for (const [name, fixture, prefix] of [
    ['plain node:http (l402Middleware)', 'packed-node-http', ''],
    ['Express (l402-paywall/express)', 'packed-express', ''],
    ['Hono on @hono/node-server (l402-paywall/hono)', 'packed-hono', ''],
    ['Hono on @hono/node-server (withL402)', 'packed-hono', '/fetch'],
  ] as const) {
    it(
      name,
      async () => {
        const url = await serve(process.execPath, ['server.js'], await installed(fixture));
        await provePaidFlow(`${url}${prefix}/paid`, `${url}/pay`);
        await provePaymentScheme(`${url}${prefix}/paid`, `${url}/pay`);
        await proveServeStep({ paid: `${url}${prefix}/paid`, flaky: `${url}${prefix}/flaky`, onPaid: `${url}${prefix}/onpaid`, pay: `${url}/pay` });
      },
      3 * MINUTE,
    );
  }
});

describe('the paid flow inside other runtimes, from the packed core, in both schemes', () => {
  const runtimes: [string, (app: string) => [string, string[]]][] = [
    ["Vercel's edge-runtime (Edge Functions VM)", () => [process.execPath, ['serve-edge-runtime.js']]],
    ['workerd through miniflare (Cloudflare Workers)', () => [process.execPath, ['serve-workerd.js']]],
    ['Deno', (app) => [join(app, 'node_modules/.bin/deno'), ['run', '--allow-net=127.0.0.1', '--allow-env=L402_SECRET', 'serve-deno.js']]],
    ['Bun', (app) => [join(app, 'node_modules/.bin/bun'), ['serve-bun.js']]],
  ];
  for (const [name, command] of runtimes) {
    it(
      name,
      async () => {
        const app = await installed('packed-runtimes');
        const url = await serve(...command(app), app);
        await provePaidFlow(`${url}/paid`, `${url}/pay`);
        await provePaymentScheme(`${url}/paid`, `${url}/pay`);
        await proveServeStep({ paid: `${url}/paid`, flaky: `${url}/flaky`, onPaid: `${url}/onpaid`, pay: `${url}/pay` });
      },
      3 * MINUTE,
    );
  }
});

describe('Next.js App Router (create-next-app defaults, no transpilePackages): next build without any runtime setting, next start and next dev with the secret', () => {
  const startNext = (nodeEnv?: string) =>
    awaitStep<string>(WORK, 'next-build').then(async (app) => {
      const port = await freePort();
      const next = join(app, 'node_modules/next/dist/bin/next');
      return serve(process.execPath, [next, 'start', '-p', String(port), '-H', '127.0.0.1'], app, {
        ready: /Ready in/,
        url: `http://127.0.0.1:${port}`,
        ...(nodeEnv && { env: { NODE_ENV: nodeEnv } }),
      });
    });
  let production: Promise<string> | undefined;
  let local: Promise<string> | undefined;
  // `next start` as deployed (it sets NODE_ENV=production), once for every test that needs it.
  const nextServer = () => (production ??= startNext());
  // The same build started with NODE_ENV=test, where the dev node and its wallet run: the paid
  // flows and the README's recipe paid with the dev wallet (under production they refuse).
  const localNextServer = () => (local ??= startNext('test'));

  it(
    'next build ran with no L402_SECRET, LIGHTNING_ADDRESS or L402_SERVICE_URL in its environment, and built every route, managed mode on both runtimes among them',
    async () => {
      const env = nextBuildEnv();
      expect([env.L402_SECRET, env.LIGHTNING_ADDRESS, env.L402_SERVICE_URL]).toEqual([undefined, undefined, undefined]);
      const app = await awaitStep<string>(WORK, 'next-build');
      const routes = Object.values(JSON.parse(readFileSync(join(app, '.next/app-path-routes-manifest.json'), 'utf8')) as Record<string, string>);
      expect(routes).toEqual(
        expect.arrayContaining([
          '/api/hello',
          '/api/dev/pay',
          '/api/dev/receive/[[...hash]]',
          '/api/generate',
          '/api/node',
          '/api/edge',
          '/api/managed/node',
          '/api/managed/edge',
        ]),
      );
    },
    10 * MINUTE,
  );

  for (const runtime of ['node', 'edge']) {
    it(
      `a managed-mode route on the ${runtime} runtime, started without its settings, answers 503 NOT_CONFIGURED naming each`,
      async () => {
        const base = await nextServer();
        const answer = await fetch(`${base}/api/managed/${runtime}`);
        expect(answer.status).toBe(503);
        expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
        const body = (await answer.json()) as { error: string; code: string; missing: string[] };
        expect(body).toMatchObject({ code: 'NOT_CONFIGURED', missing: ['managed.lightningAddress', 'managed.serviceUrl'] });
        expect(body.error).toContain('option `managed.lightningAddress` is missing');
        expect(body.error).toContain('option `managed.serviceUrl` is missing');
      },
      10 * MINUTE,
    );
  }

  it(
    "the package README's recipe under next start (production): the dev node sells nothing (503 DEV_NODE_IN_PRODUCTION), its wallet's routes answer 404",
    async () => {
      const base = await nextServer();
      const asked = await fetch(`${base}/api/hello`);
      expect(asked.status).toBe(503);
      expect(asked.headers.get('www-authenticate')).toBeNull();
      const body = (await asked.json()) as { error: string; code: string };
      expect(body.code).toBe('DEV_NODE_IN_PRODUCTION');
      expect(body.error).toContain('NODE_ENV is "production"');
      for (const [path, method] of [
        ['/api/dev/pay', 'POST'],
        ['/api/dev/receive', 'POST'],
        [`/api/dev/receive/${'ab'.repeat(32)}`, 'GET'],
      ] as const) {
        const refused = await fetch(`${base}${path}`, {
          method,
          ...(method === 'POST' && { headers: { 'content-type': 'application/json' }, body: '{}' }),
        });
        expect(refused.status, path).toBe(404);
        expect(await refused.json()).toMatchObject({ code: 'NOT_FOUND', error: expect.stringContaining('NODE_ENV is "production"') });
      }
    },
    10 * MINUTE,
  );

  it(
    "the package README's recipe, as pasted, under next start with NODE_ENV=test: `l402-paywall --dev` pays /api/hello, and `--session` opens a session on /api/generate, streams it and gets its refund",
    async () => {
      const base = await localNextServer();
      const app = await awaitStep<string>(WORK, 'next-build');
      const bin = join(app, 'node_modules/.bin/l402-paywall');
      const hello = await run(bin, ['--dev', base, `${base}/api/hello`], { cwd: app, allowFailure: true, timeoutMs: 2 * MINUTE });
      expect(hello.code, hello.output).toBe(0);
      expect(hello.output).toContain('{"hello":"world"}');

      const session = await run(bin, ['--dev', base, '--session', `${base}/api/generate`], { cwd: app, allowFailure: true, timeoutMs: 2 * MINUTE });
      console.log(`l402-paywall --session against the README's /api/generate:\n${session.output}`);
      expect(session.code, session.output).toBe(0);
      expect(session.output).not.toContain('no session opened');
      // The five tokens, streamed one unit each from a 20-sat deposit: 15 sats come back.
      for (const token of ['Pay', 'once,', 'spend', 'per', 'token.']) expect(session.output).toContain(token);
      expect(session.output).toMatch(/paid 20 sats/);
      expect(session.output).toMatch(/session [0-9a-f]{64} closed, refund 15 sats/);
    },
    10 * MINUTE,
  );

  it(
    "the package README's recipe under next dev: `npx l402-paywall --dev http://localhost:<port> http://localhost:<port>/api/hello` pays on the first try",
    async () => {
      const app = await awaitStep<string>(WORK, 'next-build');
      const port = await freePort();
      const next = join(app, 'node_modules/next/dist/bin/next');
      await serve(process.execPath, [next, 'dev', '-p', String(port), '-H', '127.0.0.1'], app, { ready: /Ready in/, url: `http://127.0.0.1:${port}` });
      const base = `http://localhost:${port}`;
      const startedAt = Date.now();
      const { code, output } = await run('npx', ['l402-paywall', '--dev', base, `${base}/api/hello`], { cwd: app, allowFailure: true, timeoutMs: 5 * MINUTE });
      console.log(`npx l402-paywall --dev against next dev (routes compiled on first request): ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
      expect(code, output).toBe(0);
      expect(output).toContain('{"hello":"world"}');
      expect(output).toMatch(
        /l402-paywall: paid 1 sat \(routing fee 0 sats\) with dev wallet of http:\/\/localhost:\d+ to localhost:\d+, payment hash [0-9a-f]{64}; HTTP 200/,
      );
    },
    10 * MINUTE,
  );

  for (const runtime of ['node', 'edge']) {
    it(
      `a paid route on the ${runtime} runtime, and what follows its handler`,
      async () => {
        const url = `${await localNextServer()}/api/${runtime}`;
        await provePaidFlow(url, url);
        await provePaymentScheme(url, url);
        await proveServeStep({ paid: url, flaky: url, onPaid: `${url}?onpaid`, pay: url });
      },
      10 * MINUTE,
    );
  }

  // An agent in a route handler pays the local service (npm start's code, in this worker) through its dev wallet.
  const service = useDevServer();
  let serviceDatabase: Database | undefined;
  // The demo logs each payment to the service's database (PGlite in memory): opened and migrated here, not during a payment.
  beforeAll(async () => {
    serviceDatabase = await service.ctx.database();
  }, 2 * MINUTE);
  afterAll(() => serviceDatabase?.close());
  for (const runtime of ['node', 'edge']) {
    it(
      `a route handler on the ${runtime} runtime pays a paid route of the local service with fetchWithL402`,
      async () => {
        const demo = `${service.url}/api/demo/btc-price`;
        // Paid, or it would not answer 200.
        expect((await fetch(demo)).status).toBe(402);
        const answer = await fetch(`${await nextServer()}/api/agent/${runtime}?service=${encodeURIComponent(service.url)}`, {
          signal: AbortSignal.timeout(MINUTE),
        });
        const body = (await answer.json()) as {
          runtime: string;
          status: number;
          body: { usd?: unknown; source?: unknown };
          paidMsat: number;
          paidByThisCall: boolean;
        };
        expect(answer.status, JSON.stringify(body)).toBe(200);
        expect(body).toMatchObject({ runtime: runtime === 'node' ? 'nodejs' : 'edge', status: 200, paidMsat: 1000, paidByThisCall: true });
        expect(body.body).toMatchObject({ usd: expect.any(Number), source: 'simulated' });
      },
      10 * MINUTE,
    );
  }
});
