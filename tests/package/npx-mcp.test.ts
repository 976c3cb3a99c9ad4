// The MCP configuration of the README, run as an MCP client runs it: the
// command `npx -y l402-mcp --dev <service>`, in an empty folder, with an empty
// npm cache, both packages (the packed l402-paywall and l402-mcp tarballs)
// published to a local registry (verdaccio, every other package proxied from
// the npm registry), driven by the MCP SDK's own client over stdio: it lists
// the tools, lists the service's directory and pays the demo with the dev
// wallet, then lists the service's paid MCP tools (POST /api/mcp) and pays the
// demo tool with call_paid_tool. And `npx -y l402-paywall mcp`, which cannot start without the
// optional peer @modelcontextprotocol/sdk, says to run l402-mcp instead.
//
// Slow (every dependency is downloaded through the registry into an empty
// cache): a test of the `package` project, after the packed library is made
// by tests/package/prepare.ts.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { addressProofHeaders } from '../support/directory.js';
import { awaitStep, cleanEnv, freePort, packLibrary, REPO_DIR, run, startServer, type PackedLibrary, type RunningServer } from '../support/packed.js';
import { useDevServer } from '../support/server.js';

const MINUTE = 60_000;
const WORK = inject('packedWork');
const DEMO_PRICE_SATS = 2;
const service = useDevServer(() => ({ DEMO_PRICE_SATS: String(DEMO_PRICE_SATS) }));

const here = mkdtempSync(join(tmpdir(), 'l402-npx-mcp-'));
let registry: RunningServer | undefined;
let client: Client | undefined;
let library: PackedLibrary;
let mcpPackage: PackedLibrary;
/** What npx runs with: the local registry, an empty cache, no user configuration. */
let npxEnv: NodeJS.ProcessEnv;
const cache = join(here, 'npm-cache');
const emptyFolder = join(here, 'empty');

/** npm's integrity string of a file: what a lockfile records for the tarball it installed. */
const integrity = (file: string) => `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;

beforeAll(async () => {
  await service.ctx.database();
  const proof = await addressProofHeaders(service.ctx, 'demo@example.com');
  const registered = await fetch(`${service.url}/api/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...proof },
    body: JSON.stringify({
      url: `${service.url}/api/demo/btc-price`,
      name: 'BTC price',
      price_sats: DEMO_PRICE_SATS,
      lightning_address: 'demo@example.com',
      category: 'finance',
    }),
  });
  expect(registered.status).toBe(200);

  library = await awaitStep<PackedLibrary>(WORK, 'pack');
  mcpPackage = await packLibrary(join(here, 'pack'), { packageDir: join(REPO_DIR, 'packages/l402-mcp') });

  // Our two packages are published here and never looked up upstream; everything else comes from the npm registry.
  const port = await freePort();
  const registryUrl = `http://127.0.0.1:${port}/`;
  writeFileSync(
    join(here, 'verdaccio.yaml'),
    `storage: ${join(here, 'storage')}
auth:
  htpasswd:
    file: ${join(here, 'htpasswd')}
uplinks:
  npmjs:
    url: https://registry.npmjs.org/
    timeout: 60s
packages:
  'l402-paywall':
    access: $all
    publish: $authenticated
  'l402-mcp':
    access: $all
    publish: $authenticated
  '**':
    access: $all
    proxy: npmjs
web:
  enable: false
log: { type: stdout, format: pretty, level: warn }
`,
  );
  registry = await startServer(
    process.execPath,
    [join(REPO_DIR, 'node_modules/verdaccio/bin/verdaccio'), '--config', join(here, 'verdaccio.yaml'), '--listen', `127.0.0.1:${port}`],
    {
      cwd: here,
      env: cleanEnv(),
      ready: /http address/,
      url: registryUrl,
    },
  );
  const user = await fetch(`${registryUrl}-/user/org.couchdb.user:publisher`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'publisher', password: 'publisher-password' }),
  });
  expect(user.status).toBe(201);
  const { token } = (await user.json()) as { token: string };
  const publisherRc = join(here, 'publisher.npmrc');
  writeFileSync(publisherRc, `//127.0.0.1:${port}/:_authToken=${token}\n`);
  for (const tarball of [library.tarball, mcpPackage.tarball]) {
    await run('npm', ['publish', tarball, '--registry', registryUrl], {
      cwd: here,
      env: cleanEnv({ npm_config_userconfig: publisherRc, npm_config_cache: join(here, 'publish-cache') }),
    });
  }

  mkdirSync(emptyFolder);
  const emptyRc = join(here, 'empty.npmrc');
  writeFileSync(emptyRc, '');
  npxEnv = cleanEnv({ npm_config_registry: registryUrl, npm_config_cache: cache, npm_config_userconfig: emptyRc });
}, 10 * MINUTE);

afterAll(async () => {
  await client?.close();
  await registry?.stop();
  rmSync(here, { recursive: true, force: true });
}, MINUTE);

interface ToolResult {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
}

describe('npx -y l402-mcp (the MCP configuration of the README)', () => {
  it(
    'starts from an empty folder with an empty npm cache, and an MCP client lists the tools, the directory, and pays the demo with the dev wallet',
    async () => {
      const stderr: string[] = [];
      const transport = new StdioClientTransport({
        command: 'npx',
        args: ['-y', 'l402-mcp', '--dev', service.url],
        cwd: emptyFolder,
        env: npxEnv as Record<string, string>,
        stderr: 'pipe',
      });
      transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
      client = new Client({ name: 'l402-npx-test-agent', version: '1.0.0' });
      const startedAt = Date.now();
      try {
        // npx installs everything before the server reads its first message: the first start may take minutes.
        await client.connect(transport, { timeout: 8 * MINUTE });
      } catch (error) {
        throw new Error(`npx -y l402-mcp did not start: ${(error as Error).message}\n${stderr.join('')}`);
      }
      console.log(`npx -y l402-mcp, empty npm cache: ${((Date.now() - startedAt) / 1000).toFixed(1)} s from the command to the MCP handshake`);
      expect(client.getServerVersion()).toMatchObject({ name: 'l402-paywall', version: '0.1.0' });

      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['call_paid_api', 'call_paid_tool', 'list_paid_apis', 'list_paid_tools']);

      const listing = (await client.callTool({ name: 'list_paid_apis', arguments: {} })) as ToolResult;
      expect(listing.isError, listing.content[0]?.text).toBeFalsy();
      expect(listing.structuredContent).toMatchObject({
        count: 1,
        apis: [{ url: `${service.url}/api/demo/btc-price`, name: 'BTC price', price_sats: DEMO_PRICE_SATS, category: 'finance' }],
        openapi: `${service.url}/api/openapi.json`,
      });

      const paid = (await client.callTool({ name: 'call_paid_api', arguments: { url: `${service.url}/api/demo/btc-price`, max_price_sats: 5 } })) as ToolResult;
      expect(paid.isError, paid.content[0]?.text).toBeFalsy();
      expect(paid.structuredContent).toMatchObject({ status: 200, sats_paid: DEMO_PRICE_SATS, fee_sats: 0, session_spent_sats: DEMO_PRICE_SATS });
      expect(JSON.parse(String(paid.structuredContent!.body))).toMatchObject({ usd: expect.any(Number), source: 'simulated' });
      expect(stderr.join('')).toContain(`l402-mcp: ready on stdio; paying with dev wallet of ${service.url}`);

      // What ran is what was packed: npx's install holds exactly our two tarballs, from the local registry.
      const npxDir = join(cache, '_npx');
      const [install] = readdirSync(npxDir);
      const installed = JSON.parse(readFileSync(join(npxDir, install!, 'node_modules/.package-lock.json'), 'utf8')) as {
        packages: Record<string, { resolved?: string; integrity?: string }>;
      };
      expect(installed.packages['node_modules/l402-mcp']).toMatchObject({
        integrity: integrity(mcpPackage.tarball),
        resolved: expect.stringContaining('127.0.0.1'),
      });
      expect(installed.packages['node_modules/l402-paywall']).toMatchObject({
        integrity: integrity(library.tarball),
        resolved: expect.stringContaining('127.0.0.1'),
      });
      expect(installed.packages['node_modules/@modelcontextprotocol/sdk']).toBeDefined();

      // The service's paid MCP tools: listed with their prices, the demo tool paid within the budget with the dev wallet.
      const mcpUrl = `${service.url}/api/mcp`;
      const toolList = (await client.callTool({ name: 'list_paid_tools', arguments: { server: mcpUrl } })) as ToolResult;
      expect(toolList.isError, toolList.content[0]?.text).toBeFalsy();
      const listed = (toolList.structuredContent!.tools as { name: string; price_sats?: number; price_intent?: string }[]).find(
        (tool) => tool.price_intent === 'charge',
      );
      expect(listed).toMatchObject({ price_sats: DEMO_PRICE_SATS });
      const tool = (await client.callTool({ name: 'call_paid_tool', arguments: { server: mcpUrl, tool: listed!.name, max_price_sats: 5 } })) as ToolResult;
      expect(tool.isError, tool.content[0]?.text).toBeFalsy();
      expect(tool.structuredContent).toMatchObject({
        is_error: false,
        sats_paid: DEMO_PRICE_SATS,
        scheme: 'Payment',
        receipt: { payment_hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
        session_spent_sats: 2 * DEMO_PRICE_SATS,
      });
      const content = tool.structuredContent!.content as { type: string; text: string }[];
      expect(JSON.parse(content[0]!.text)).toMatchObject({ usd: expect.any(Number), source: 'simulated' });
    },
    10 * MINUTE,
  );

  it(
    'npx -y l402-paywall mcp does not start (npx installs no optional peer), and says to run npx -y l402-mcp',
    async () => {
      const { code, output } = await run('npx', ['-y', 'l402-paywall', 'mcp', '--dev', service.url], {
        cwd: emptyFolder,
        env: npxEnv,
        allowFailure: true,
        timeoutMs: 5 * MINUTE,
      });
      expect(code, output).toBe(2);
      expect(output).toContain('l402-paywall mcp needs @modelcontextprotocol/sdk, which is not installed: run the MCP server with `npx -y l402-mcp [options]`');
    },
    6 * MINUTE,
  );
});
