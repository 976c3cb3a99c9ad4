// The MCP server (the real bin over stdio, driven by the SDK's own Client)
// against a hostile directory and hostile APIs. The URLs an agent calls come
// from directories and from the model: none may steer it into its own
// network (loopback, LAN, cloud metadata) unless the operator allowed that,
// and no answer may hold it for ever or fill its memory.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { useDevServer } from '../support/server.js';
import { MIB, SECRET_BODY, startHostileServer, type HostileServer } from '../../packages/l402-paywall/tests/support/hostile-server.js';
import { L402_BIN as BIN } from '../support/bins.js';

const server = useDevServer();

interface ToolResult {
  isError?: boolean;
  content: { type: string; text: string }[];
}

/** An MCP session of its own: `l402-paywall mcp <args>` with the SDK's stdio client. */
async function startAgent(args: string[]) {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(NWC_URL|LNBITS_|PHOENIXD_|LND_|CLN_|BLINK_|LIGHTNING_NETWORK|L402_DIRECTORY_URL)/.test(k)) env[k] = v;
  const transport = new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', BIN, 'mcp', ...args], env, stderr: 'ignore' });
  const client = new Client({ name: 'l402-hostile-test-agent', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    /** The server process's peak resident memory so far, bytes (Linux). */
    peakRss: () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${transport.pid}/status`, 'utf8'))![1]) * 1024,
    call: async (name: string, args: Record<string, unknown>) => {
      const result = (await client.callTool({ name, arguments: args })) as ToolResult;
      return { isError: result.isError === true, ...(JSON.parse(result.content[0]!.text) as Record<string, unknown>) } as Record<string, unknown>;
    },
  };
}

let internal: HostileServer; // a service on the agent's own machine: never to be reached unless allowed
let directory: HostileServer; // the directory the operator named (--directory): allowed, and hostile
let agent: Awaited<ReturnType<typeof startAgent>>; // what an operator runs: nothing but --dev and --directory
let permissive: Awaited<ReturnType<typeof startAgent>>; // --allow-private, short limits

beforeAll(async () => {
  [internal, directory] = await Promise.all([startHostileServer(), startHostileServer()]);
  // Entries a directory may list (registered before it checked urls, or by a directory that never did).
  const db = await server.ctx.database();
  for (const url of [`${internal.url}/secret`, `http://localhost:${internal.port}/secret`, 'http://169.254.169.254/latest/meta-data/']) {
    await db.query('INSERT INTO apis (url, name, price_sats, lightning_address) VALUES ($1, $2, 1, $3)', [url, 'Poisoned', 'evil@example.com']);
  }
  [agent, permissive] = await Promise.all([
    startAgent(['--dev', server.url, '--directory', directory.url]),
    startAgent(['--dev', server.url, '--allow-private', '--timeout-seconds', '2', '--max-body-bytes', '1000']),
  ]);
});

afterAll(async () => {
  await Promise.all([agent?.client.close(), permissive?.client.close()]);
  await Promise.all([internal?.close(), directory?.close()]);
});

describe('l402-paywall mcp: destinations', () => {
  it("refuses the directory's entries that point into the agent's network, saying why, and never connects", async () => {
    // The listing comes from the --dev service (a directory the operator named), poisoned entries included.
    const listing = await agent.call('list_paid_apis', { directory: server.url });
    const poisoned = (listing.apis as { url: string }[]).map((api) => api.url);
    expect(poisoned).toHaveLength(3);
    for (const url of [...poisoned, `http://[::ffff:127.0.0.1]:${internal.port}/secret`, `http://0x7f.0.0.1:${internal.port}/secret`]) {
      const answer = await agent.call('call_paid_api', { url });
      expect(answer, url).toMatchObject({ isError: true, code: 'DESTINATION_REFUSED', redirected: false });
      expect(['loopback', 'link-local']).toContain(answer.address_kind);
      expect(answer.error).toMatch(/not a public one.*--allow-private/);
    }
    expect(internal.requests).toEqual([]);
  });

  it('refuses the --dev service under another host name (localhost for 127.0.0.1), saying that the host differs and how to fix it', async () => {
    const dev = new URL(server.url);
    expect(dev.hostname).toBe('127.0.0.1');
    const asLocalhost = `http://localhost:${dev.port}/api/demo/btc-price`;
    const answer = await agent.call('call_paid_api', { url: asLocalhost });
    expect(answer).toMatchObject({ isError: true, code: 'DESTINATION_REFUSED', address_kind: 'loopback', url: asLocalhost });
    expect(answer.error).toBe(
      `Refused http://localhost:${dev.port}: localhost is a loopback address, not a public one (localhost:${dev.port} is not the host of --dev ${dev.origin} ` +
        '(the services named at start are allowed by their exact origin, and localhost and 127.0.0.1 are different names even when they reach the same machine): ' +
        `call ${dev.origin}/api/demo/btc-price, or start l402-paywall mcp with --dev http://localhost:${dev.port})`,
    );
  });

  it('refuses a redirect from an allowed service into the private network', async () => {
    const answer = await agent.call('call_paid_api', { url: `${directory.url}/redirect?to=${encodeURIComponent(`${internal.url}/secret`)}` });
    expect(answer).toMatchObject({ isError: true, code: 'DESTINATION_REFUSED', redirected: true, url: `${internal.url}/secret` });
    expect(directory.requests.at(-1)).toMatch(/^\/redirect/);
    expect(internal.requests).toEqual([]);
  });

  it('refuses a directory the model names on a private host; the ones the operator named are read', async () => {
    const answer = await agent.call('list_paid_apis', { directory: internal.url });
    expect(answer).toMatchObject({ isError: true, code: 'DESTINATION_REFUSED' });
    expect(internal.requests).toEqual([]);
    expect(await agent.call('list_paid_apis', {})).toMatchObject({ isError: true, code: 'DIRECTORY_ERROR' }); // --directory: reached, 404
    expect(directory.requests.at(-1)).toBe('/api/apis.json');
    const free = await agent.call('call_paid_api', { url: `${server.url}/api/verify`, method: 'POST', body: '{"token":"L402 abc:def"}' });
    expect(free).toMatchObject({ status: 200, sats_paid: 0 });
  });

  it('with --allow-private reaches the private network', async () => {
    expect(await permissive.call('call_paid_api', { url: `${internal.url}/secret` })).toMatchObject({ status: 200, body: SECRET_BODY });
    expect(internal.requests).toEqual(['/secret']);
  });
});

describe('l402-paywall mcp: answers', () => {
  it('reads at most the first 100,000 bytes of a 128 MiB answer, says it cut it, and hangs up', async () => {
    const before = agent.peakRss();
    const answer = await agent.call('call_paid_api', { url: `${directory.url}/stream?mib=128` });
    expect(answer).toMatchObject({ status: 200, body_truncated: true, body_truncated_at_bytes: 100_000, sats_paid: 0 });
    expect(answer.body).toBe('a'.repeat(100_000));
    const { bytes, clientHungUp } = await directory.streamed();
    expect(clientHungUp).toBe(true);
    expect(bytes).toBeLessThan(16 * MIB);
    expect(agent.peakRss() - before).toBeLessThan(64 * MIB);
  });

  it('a 402 without WWW-Authenticate and a 128 MiB body: no challenge read past 64 KiB, the answer cut', async () => {
    const answer = await permissive.call('call_paid_api', { url: `${internal.url}/stream?mib=128&status=402&json=1` });
    expect(answer).toMatchObject({ status: 402, body_truncated: true, body_truncated_at_bytes: 1000, sats_paid: 0 });
    expect(await internal.streamed()).toMatchObject({ clientHungUp: true, bytes: expect.any(Number) });
    expect((await internal.streamed()).bytes).toBeLessThan(16 * MIB);
  });

  it('ends a call whose answer trickles, or never comes, after --timeout-seconds', async () => {
    for (const path of ['/trickle', '/silent']) {
      const started = Date.now();
      const answer = await permissive.call('call_paid_api', { url: `${internal.url}${path}` });
      expect(answer, path).toMatchObject({ isError: true, code: 'TIMEOUT', session_spent_sats: 0 });
      expect(answer.error).toMatch(/no complete answer within 2 s/);
      expect(Date.now() - started).toBeLessThan(10_000);
    }
  });
});
