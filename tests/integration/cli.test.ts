// The package's command line, run as a user runs it (a child process, the
// real bin), against the real local server: it pays the demo with --dev,
// refuses above --max-sats, and says so with its documented exit codes.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withL402 } from 'l402-paywall';
import { createDevNode, createDevPayHandler } from 'l402-paywall/backends';
import { useDevServer } from '../support/server.js';
import { closedPort } from '../../packages/l402-paywall/tests/support/ports.js';
import { L402_BIN as BIN, L402_MCP_BIN } from '../support/bins.js';
import { codeBlocks } from '../support/markdown.js';

const server = useDevServer(() => ({ DEMO_PRICE_SATS: '2' }));
// The first paid demo logs its payment, which opens (and migrates) the in-process
// database: done here, so no test waits on it.
beforeAll(async () => {
  await server.ctx.database();
});

/** Environment without any wallet setting of the machine running the tests. */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(NWC_URL|LNBITS_|PHOENIXD_|LND_|CLN_|BLINK_|LIGHTNING_NETWORK)/.test(k)) env[k] = v;
  return { ...env, ...extra };
}

/** The l402-mcp package's bin (the MCP server), run to its end: for its usage errors, which end it before it reads stdin. */
function runMcpBin(args: string[], env = cleanEnv()): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', L402_MCP_BIN, ...args], { env, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr });
    });
  });
}

export function runBin(args: string[], env = cleanEnv()): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', BIN, ...args], { env, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr });
    });
  });
}

describe('l402-paywall <url>', () => {
  it('pays the demo with the dev wallet: body on stdout, what was paid on stderr, exit 0', async () => {
    const { code, stdout, stderr } = await runBin([`${server.url}/api/demo/btc-price`, '--dev', server.url, '--max-sats', '2']);
    expect(stderr).toMatch(/paid 2 sats \(routing fee 0 sats\) with dev wallet of .* payment hash [0-9a-f]{64}; HTTP 200/);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ source: 'simulated' });
  });

  it('refuses to pay above --max-sats: exit 3, nothing on stdout', async () => {
    const { code, stdout, stderr } = await runBin([`${server.url}/api/demo/btc-price`, '--dev', server.url, '--max-sats', '1']);
    expect(code).toBe(3);
    expect(stdout).toBe('');
    expect(stderr).toContain('[PRICE_ABOVE_MAXIMUM]');
  });

  it('sends -X, -d and -H without a wallet when nothing is to be paid, and exits 1 on an error status with its body printed', async () => {
    // A free URL needs no wallet.
    const ok = await runBin([`${server.url}/api/verify`, '-d', '{"token":"L402 abc:def"}', '-H', 'X-Test: 1']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ valid: false });
    expect(ok.stderr).toContain('paid nothing; HTTP 200');
    const wrongMethod = await runBin([`${server.url}/api/verify`, '-X', 'PUT', '-i', '--dev', server.url]);
    expect(wrongMethod.code).toBe(1);
    expect(wrongMethod.stdout).toMatch(/^HTTP 405 /);
    expect(wrongMethod.stdout).toContain('"code":"METHOD_NOT_ALLOWED"');
  });

  it('payment failed (nothing listens at the dev wallet: nothing was paid): exit 4, PAYMENT_FAILED saying so, not an unknown outcome', async () => {
    const wallet = `http://127.0.0.1:${await closedPort()}`;
    const { code, stdout, stderr } = await runBin([`${server.url}/api/demo/btc-price`, '--dev', wallet, '--max-sats', '5']);
    expect({ code, stdout }).toEqual({ code: 4, stdout: '' });
    expect(stderr).toBe(
      `l402-paywall: The wallet did not pay: could not connect to the dev wallet at ${wallet}/api/dev/pay (ECONNREFUSED), so nothing was paid: is the service running there? [PAYMENT_FAILED]\n`,
    );
  });

  it('a URL option without its scheme (--dev localhost:3000): exit 2 before any request, naming the option and what it expects', async () => {
    const asked: string[] = [];
    const { url, server: app } = await startApp({
      '/api/hello': (request) => {
        asked.push(new URL(request.url).pathname);
        return new Response('{}', { status: 402 });
      },
    });
    try {
      const host = new URL(url).host;
      const [noScheme, ftp] = await Promise.all([runBin([`${url}/api/hello`, '--dev', host]), runBin([`${url}/api/hello`, '--dev', 'ftp://127.0.0.1/'])]);
      expect(noScheme).toEqual({
        code: 2,
        stdout: '',
        stderr: `l402-paywall: --dev must be an http(s) URL of the local service (npm start) or your app with the dev wallet route, such as http://127.0.0.1:3000, got "${host}" (did you mean http://${host}?)\n`,
      });
      expect(ftp.code).toBe(2);
      expect(ftp.stderr).toMatch(/^l402-paywall: --dev must be an http\(s\) URL .* got "ftp:\/\/127\.0\.0\.1\/"\n$/);
      expect(asked).toEqual([]);
    } finally {
      await new Promise((resolve) => app.close(resolve));
    }
  });

  it('l402-mcp checks --dev, --directory and L402_DIRECTORY_URL before it starts: exit 2, naming the option', async () => {
    const host = 'localhost:3000';
    const runs = await Promise.all(
      [
        { args: ['--dev', host], env: cleanEnv(), named: '--dev' },
        { args: ['--dev', server.url, '--directory', host], env: cleanEnv(), named: '--directory' },
        { args: [], env: cleanEnv({ L402_DIRECTORY_URL: host }), named: 'L402_DIRECTORY_URL' },
      ].map(async ({ args, env, named }) => ({ named, ...(await runMcpBin(args, env)) })),
    );
    for (const { named, code, stdout, stderr } of runs) {
      expect({ code, stdout }, named).toEqual({ code: 2, stdout: '' });
      expect(stderr).toMatch(new RegExp(`^l402-mcp: ${named} must be an http\\(s\\) URL .*, got "${host}" \\(did you mean http://${host}\\?\\)\n$`));
    }
  });

  it('usage errors and a missing wallet: exit 2; an unreachable URL: exit 5', async () => {
    expect((await runBin([])).code).toBe(2);
    expect((await runBin(['not a url', '--dev', server.url])).code).toBe(2);
    expect((await runBin([`${server.url}/api/demo/btc-price`, '--max-sats', '-3'])).code).toBe(2);
    const noWallet = await runBin([`${server.url}/api/demo/btc-price`]);
    expect(noWallet.code).toBe(2);
    expect(noWallet.stderr).toContain('No wallet');
    const lnbitsHalf = await runBin([`${server.url}/api/demo/btc-price`], cleanEnv({ LNBITS_URL: 'http://127.0.0.1:1', LIGHTNING_NETWORK: 'regtest' }));
    expect(lnbitsHalf.stderr).toContain('LNBITS_ADMIN_KEY');
    expect(lnbitsHalf.code).toBe(2);
    expect((await runBin([`http://127.0.0.1:${await closedPort()}/x`, '--dev', server.url])).code).toBe(5);
    const help = await runBin(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
  });
});

/** The long options a --help text lists under "Options:" (`  -X, --request M  ...`), sorted. */
function optionsOfHelp(usage: string): string[] {
  const options = usage.slice(usage.indexOf('\nOptions:\n'));
  return [...new Set([...options.matchAll(/^ {2}(?:-[A-Za-z], )?(--[a-z][a-z-]*)/gm)].map((m) => m[1]!))].sort();
}

/** The options a documented usage block names besides its command's own words (`-X METHOD` counted as --request, as --help pairs them), as long options, sorted. */
function optionsOfUsageLines(code: string, command: string, usage: string): string[] {
  const longOf = new Map([...usage.matchAll(/^ {2}(-[A-Za-z]), (--[a-z][a-z-]*)/gm)].map((m) => [m[1]!, m[2]!]));
  const named = [...code.replaceAll(command, '').matchAll(/(?<![\w-])(--[a-z][a-z-]*|-[A-Za-z])(?![\w-])/g)].map((m) => longOf.get(m[1]!) ?? m[1]!);
  return [...new Set(named)].sort();
}

/** An app of the reader's own on loopback: routes by path, each a Web handler. */
async function startApp(routes: Record<string, (request: Request) => Response | Promise<Response>>): Promise<{ url: string; server: Server }> {
  const server = createServer(
    getRequestListener((request) => {
      const route = routes[new URL(request.url).pathname];
      return route
        ? route(request)
        : new Response('<!doctype html><h1>404: This page could not be found.</h1>', { status: 404, headers: { 'content-type': 'text/html' } });
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('an app with its own dev node (l402-paywall --dev <the app>)', () => {
  const devNode = createDevNode();
  const paid = withL402(() => Response.json({ hello: 'world' }), {
    priceSats: 1,
    provider: devNode,
    secret: 'cli-app-secret-0123456789abcdef0123456789abcdef',
  });
  const apps: Server[] = [];
  afterAll(() => Promise.all(apps.map((app) => new Promise((resolve) => app.close(resolve)))));

  it("pays a paid route through the app's createDevPayHandler route at /api/dev/pay", async () => {
    const { url, server: app } = await startApp({ '/api/hello': paid, '/api/dev/pay': createDevPayHandler(devNode) });
    apps.push(app);
    const { code, stdout, stderr } = await runBin(['--dev', url, `${url}/api/hello`]);
    expect(stderr).toMatch(
      /paid 1 sat \(routing fee 0 sats\) with dev wallet of http:\/\/127\.0\.0\.1:\d+ to 127\.0\.0\.1:\d+, payment hash [0-9a-f]{64}; HTTP 200/,
    );
    expect(code).toBe(0);
    expect(stdout).toBe('{"hello":"world"}');
  });

  it('without a dev wallet at the URL: exit 2, naming what is missing and how to add it', async () => {
    const { url, server: app } = await startApp({ '/api/hello': paid });
    apps.push(app);
    const { code, stdout, stderr } = await runBin(['--dev', url, `${url}/api/hello`]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      `l402-paywall: no dev wallet at ${url}/api/dev/pay (HTTP 404): add a route with createDevPayHandler(devNode) from l402-paywall/backends (see its README)\n`,
    );
  });
});

describe("the command line's own surface", () => {
  const version = (JSON.parse(readFileSync(new URL('../../packages/l402-paywall/package.json', import.meta.url), 'utf8')) as { version: string }).version;

  it("--version (and -V) prints the package's version, for the command line and the MCP server", async () => {
    const variants = [['--version'], ['mcp', '--version'], ['-V'], ['mcp', '-V']];
    const runs = await Promise.all(variants.map((args) => runBin(args)));
    for (const [index, { code, stdout, stderr }] of runs.entries())
      expect({ code, stdout, stderr }, variants[index]!.join(' ')).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('--help names every option the command takes; mcp --help goes to stdout with exit 0', async () => {
    const help = await runBin(['--help']);
    expect(help.code).toBe(0);
    for (const option of ['--max-sats', '--budget-sats', '--max-fee-sats', '--dev', '--request', '--data', '--header', '--include', '--help', '--version'])
      expect(help.stdout).toContain(option);
    const mcpHelp = await runBin(['mcp', '--help']);
    expect({ code: mcpHelp.code, stderr: mcpHelp.stderr }).toEqual({ code: 0, stderr: '' });
    expect(mcpHelp.stdout).toContain('npx -y l402-mcp');
    for (const option of ['--max-sats', '--budget-sats', '--max-fee-sats', '--dev', '--directory', '--help', '--version'])
      expect(mcpHelp.stdout).toContain(option);
  });

  it('the usage lines of the package README and docs/agents.md name exactly the options --help lists, for both commands', async () => {
    const [help, mcpHelp] = await Promise.all([runBin(['--help']), runMcpBin(['--help'])]);
    const documents = ['../../packages/l402-paywall/README.md', '../../docs/agents.md'].map((path) => ({
      path,
      blocks: codeBlocks(readFileSync(new URL(path, import.meta.url), 'utf8')),
    }));
    for (const { command, usage } of [
      { command: 'l402-paywall <url>', usage: help.stdout },
      { command: 'npx -y l402-mcp', usage: mcpHelp.stdout },
    ]) {
      const listed = optionsOfHelp(usage);
      expect(listed.length, command).toBeGreaterThan(10);
      for (const { path, blocks } of documents) {
        const block = blocks.find((b) => b.code.startsWith(command));
        expect(block, `${path}: a usage block starting "${command}"`).toBeDefined();
        expect(optionsOfUsageLines(block!.code, command, usage), `${path}, line ${block!.line}`).toEqual(listed);
      }
    }
  });

  it('an unknown option: exit 2, one line naming it, quotes balanced', async () => {
    for (const args of [
      ['--frobnicate', 'http://127.0.0.1:1/x'],
      ['mcp', '--frobnicate'],
      ['-z', 'http://127.0.0.1:1/x'],
    ]) {
      const { code, stderr } = await runBin(args);
      expect(code).toBe(2);
      expect(stderr).toBe(`l402-paywall: Unknown option ${args.find((arg) => arg.startsWith('-') && arg !== 'mcp')} (--help lists the options)\n`);
    }
  });

  it('piped, every body is written byte for byte; on a terminal a text body ends its line', async () => {
    const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]);
    const { url, server: app } = await startApp({
      '/json': () => Response.json({ a: 1 }),
      '/text-with-newline': () => new Response('line\n', { headers: { 'content-type': 'text/plain' } }),
      '/png': () => new Response(bytes, { headers: { 'content-type': 'image/png' } }),
    });
    try {
      expect((await runBin([`${url}/json`])).stdout).toBe('{"a":1}');
      expect((await runBin([`${url}/text-with-newline`])).stdout).toBe('line\n');
      const png = await new Promise<Buffer>((resolve) =>
        execFile(process.execPath, ['--import', 'tsx', BIN, `${url}/png`], { env: cleanEnv(), encoding: 'buffer' }, (_error, stdout) => resolve(stdout)),
      );
      expect([...png]).toEqual([...bytes]);
      // util-linux's script(1) gives the command a pseudo-terminal (its report on stderr set aside); the terminal writes a line's end as \r\n.
      const onTerminal = (path: string) =>
        new Promise<string>((resolve) =>
          execFile(
            'script',
            ['-qec', [process.execPath, '--import', 'tsx', BIN, `${url}${path}`].map((arg) => `'${arg}'`).join(' ') + ' 2>/dev/null', '/dev/null'],
            { env: cleanEnv(), timeout: 30_000 },
            (_error, stdout) => resolve(stdout),
          ),
        );
      expect(await onTerminal('/json')).toBe('{"a":1}\r\n');
      expect(await onTerminal('/text-with-newline')).toBe('line\r\n');
    } finally {
      await new Promise((resolve) => app.close(resolve));
    }
  });
});
