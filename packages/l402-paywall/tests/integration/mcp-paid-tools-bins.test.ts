// The command line and l402-mcp pay MCP tools: `l402-paywall tool` (in
// process) and `l402-paywall mcp`'s list_paid_tools and call_paid_tool (the
// real bin, a child process under tsx, driven by the MCP SDK's client), with
// the dev wallet of the server's origin, against an MCP server we did not
// write (the MCP SDK's server with mppx's MCP transport, a Lightning charge on
// a dev node) and against a hostile one: within --max-sats and the budget,
// never paid twice for one call, answers cut at --max-body-bytes.
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDevNode } from 'l402-paywall/backends';
import { startHostileMcpServer, type HostileMcpServer } from '../support/hostile-mcp-server.js';
import { startMppxToolServer, type MppxToolServer } from '../support/mppx-tool-server.js';
import { connectMcpBin, toolJson, type McpBin } from '../support/bin.js';

const node = createDevNode();
let server: MppxToolServer;
let hostile: HostileMcpServer;

beforeAll(async () => {
  [server, hostile] = await Promise.all([startMppxToolServer(node), startHostileMcpServer(node)]);
});
afterAll(() => Promise.all([server?.close(), hostile?.close()]));
beforeEach(() => {
  server.credentials.length = 0;
  server.served = 0;
  server.devPayments = 0;
  hostile.calls.length = 0;
});

describe('l402-paywall tool (the command, in process)', () => {
  async function run(args: string[]) {
    const { toolCommand } = await import('../../src/cli/tool-command.js');
    const [stdout, stderr] = [new PassThrough(), new PassThrough()];
    const out: string[] = [];
    const err: string[] = [];
    stdout.on('data', (chunk: Buffer) => out.push(chunk.toString()));
    stderr.on('data', (chunk: Buffer) => err.push(chunk.toString()));
    const io = { stdout, stderr, stdin: new PassThrough(), env: {}, readFile: async () => new Uint8Array() };
    const code = await toolCommand(args, io);
    return { code, stdout: out.join(''), stderr: err.join('') };
  }
  const dev = () => ['--dev', new URL(server.url).origin];

  it('lists the tools', async () => {
    const listed = await run([server.url, ...dev()]);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n').map((line) => line.split('\t')[0])).toEqual(['weather', 'dear', 'echo', '']);
  });

  it('calls a paid tool: the text to stdout, what was paid to stderr', async () => {
    const called = await run([server.url, 'weather', '{"city":"Porto"}', ...dev(), '--max-sats', '3']);
    expect(called.code).toBe(0);
    expect(called.stdout).toBe(`${JSON.stringify({ tool: 'weather', arguments: { city: 'Porto' } })}\n`);
    const id = (server.credentials[1] as { challenge: { id: string } }).challenge.id;
    expect(called.stderr).toMatch(
      new RegExp(
        `^l402-paywall: paid 2 sats \\(routing fee 0 sats\\) with dev wallet of ${new URL(server.url).origin} to ${new URL(server.url).host} for tool weather, payment hash [0-9a-f]{64}; scheme Payment, challenge id ${id}; receipt: challenge ${id}, payment hash [0-9a-f]{64}, at `,
      ),
    );
    expect(server.devPayments).toBe(1);
  });

  it('refuses a dear tool (exit 3), pays nothing; a free one says so; bad arguments are a usage error', async () => {
    const dear = await run([server.url, 'dear', ...dev()]);
    expect(dear.code).toBe(3);
    expect(dear.stderr).toMatch(/above the maximum of 10 \[PRICE_ABOVE_MAXIMUM\]/);
    const free = await run([server.url, 'echo', '{}', ...dev()]);
    expect(free.code).toBe(0);
    expect(free.stderr).toBe('l402-paywall: paid nothing; tool echo\n');
    await expect(run([server.url, 'echo', '[1]'])).rejects.toThrow(/must be a JSON object/);
    expect(server.devPayments).toBe(0);
  });
});

describe('l402-paywall mcp: list_paid_tools and call_paid_tool (through the MCP SDK client)', () => {
  let agent: McpBin;
  const call = (name: string, args: Record<string, unknown>) => agent.call(name, args);
  const json = toolJson;

  beforeAll(async () => {
    // The hostile server is on loopback too, at another origin than --dev's: --allow-private lets the agent reach it.
    agent = await connectMcpBin('mcp-tools-test-agent', [
      '--dev',
      new URL(server.url).origin,
      '--max-sats',
      '5',
      '--budget-sats',
      '6',
      '--allow-private',
      '--max-body-bytes',
      '1000',
    ]);
  });
  afterAll(() => agent?.close());

  it('lists the tools beside the other three', async () => {
    const { tools } = await agent.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['call_paid_api', 'call_paid_tool', 'list_paid_apis', 'list_paid_tools']);
    const listed = json(await call('list_paid_tools', { server: hostile.url }));
    expect(listed).toMatchObject({ server: hostile.url, count: 10 });
    expect((listed.tools as Record<string, unknown>[]).find((tool) => tool.name === 'honest')).toMatchObject({ price_sats: 1, price_intent: 'charge' });
  });

  it('pays a tool of the mppx server within the budget, with the receipt; refusals say what was spent', async () => {
    const paid = await call('call_paid_tool', { server: server.url, tool: 'weather', arguments: { city: 'Faro' } });
    expect(paid.isError).toBeFalsy();
    const id = (server.credentials[1] as { challenge: { id: string } }).challenge.id;
    expect(json(paid)).toMatchObject({
      server: server.url,
      tool: 'weather',
      content: [{ type: 'text', text: JSON.stringify({ tool: 'weather', arguments: { city: 'Faro' } }) }],
      is_error: false,
      sats_paid: 2,
      scheme: 'Payment',
      challenge_id: id,
      receipt: { challenge_id: id, payment_hash: expect.stringMatching(/^[0-9a-f]{64}$/), timestamp: expect.any(String) },
      session_spent_sats: 2,
      session_budget_left_sats: 4,
    });
    expect(paid.structuredContent).toEqual(json(paid));
    expect(server.devPayments).toBe(1);

    const dear = await call('call_paid_tool', { server: server.url, tool: 'dear' });
    expect(dear.isError).toBe(true);
    expect(json(dear)).toMatchObject({ code: 'PRICE_ABOVE_MAXIMUM', refused: true, session_spent_sats: 2 });
    const capped = await call('call_paid_tool', { server: server.url, tool: 'weather', max_price_sats: 1 });
    expect(json(capped)).toMatchObject({ code: 'PRICE_ABOVE_MAXIMUM', refused: true });
    expect(server.devPayments).toBe(1);
  });

  it('a hostile server: asked again after paying is not paid twice; a large answer is cut; a mismatched challenge is refused', async () => {
    const endless = await call('call_paid_tool', { server: hostile.url, tool: 'endless' });
    expect(endless.isError).toBe(true);
    // What the test before spent stays spent: 2 sats, and now 1 more, once.
    expect(json(endless)).toMatchObject({ code: 'TOOL_ERROR', rpc_code: -32042, sats_paid: 1, session_spent_sats: 3 });
    expect(hostile.calls.filter((c) => c.tool === 'endless')).toHaveLength(2);

    const mismatch = await call('call_paid_tool', { server: hostile.url, tool: 'wrong_amount' });
    expect(json(mismatch)).toMatchObject({ code: 'CHALLENGE_INVOICE_MISMATCH', refused: true, session_spent_sats: 3 });

    const huge = await call('call_paid_tool', { server: hostile.url, tool: 'huge' });
    expect(huge.isError).toBeFalsy();
    const cut = json(huge);
    expect(cut).toMatchObject({ content_truncated: true, content_truncated_at_bytes: 1000, sats_paid: 1, session_spent_sats: 4 });
    expect((cut.content as { text: string }[])[0]!.text).toHaveLength(1000);
  });

  it('stops at the budget of the run: 4 of 6 sats spent, one more 2-sat call, then BUDGET_EXCEEDED unpaid', async () => {
    expect(json(await call('call_paid_tool', { server: server.url, tool: 'weather' }))).toMatchObject({ sats_paid: 2, session_spent_sats: 6 });
    const over = await call('call_paid_tool', { server: server.url, tool: 'weather' });
    expect(json(over)).toMatchObject({ code: 'BUDGET_EXCEEDED', refused: true, session_spent_sats: 6, session_budget_left_sats: 0 });
    expect(server.devPayments).toBe(1);
  });
});
