// mcpToolClient against a hostile MCP server (../support/hostile-mcp-server.ts):
// a challenge that disagrees with its invoice, for another network or only in
// methods this client does not pay is refused before the wallet is asked; a
// server that asks again after being paid, or refuses the credential, is paid
// once and never again for that call; answers too large to hold, endless event
// streams and endless listings are cut, not buffered.
import { describe, expect, it } from 'vitest';
import { createBudget, L402ClientError, McpToolError, McpTransportError, mcpToolClient, type McpToolsOptions } from 'l402-paywall/client';
import { startHostileMcpServer } from '../support/hostile-mcp-server.js';
import { useRecordedServer } from '../support/paid-apps.js';

const t = useRecordedServer(startHostileMcpServer, (server) => {
  server.calls.length = 0;
  server.listPages = 0;
  server.listing = 'tools';
});

const client = (extra: Partial<McpToolsOptions> = {}) => mcpToolClient(t.server.url, { wallet: t.wallet, maxPriceSats: 5, ...extra });

async function failure(work: Promise<unknown>): Promise<unknown> {
  return work.then(
    () => expect.fail('expected the call to fail'),
    (error: unknown) => error,
  );
}

describe('refused before the wallet is asked', () => {
  it.each([
    ['wrong_amount', 'CHALLENGE_INVOICE_MISMATCH', /amount 1 sats, the invoice asks 3/],
    ['other_payment', 'CHALLENGE_INVOICE_MISMATCH', /payment hash/],
    ['mainnet', 'WRONG_NETWORK', /bitcoin/],
    ['unsupported', 'UNSUPPORTED_CHALLENGE', /tempo\/charge/],
  ])('%s: %s', async (tool, code, message) => {
    const budget = createBudget({ totalSats: 10 });
    const error = await failure(client({ budget }).callTool(tool));
    expect(error).toBeInstanceOf(L402ClientError);
    expect((error as L402ClientError).code).toBe(code);
    expect((error as L402ClientError).message).toMatch(message);
    expect((error as L402ClientError).refused).toBe(true);
    expect(t.wallet.invoices).toEqual([]);
    expect(budget.spent().totalMsat).toBe(0);
    expect(t.server.calls.map((call) => call.credential)).toEqual([undefined]);
  });
});

describe('paid once per call, never twice', () => {
  it('endless -32042: the second demand after paying is the call failing, with what it paid', async () => {
    const budget = createBudget({ totalSats: 10 });
    const error = await failure(client({ budget }).callTool('endless'));
    expect(error).toBeInstanceOf(McpToolError);
    expect((error as McpToolError).rpcCode).toBe(-32042);
    expect((error as McpToolError).receipt).toMatchObject({ amountMsat: 1000, paidByThisCall: true, tool: 'endless' });
    expect((error as McpToolError).message).toMatch(/not paid again/);
    expect(t.wallet.invoices).toHaveLength(1);
    expect(budget.spent().totalSats).toBe(1);
    expect(t.server.calls).toHaveLength(2);
  });

  it('-32043 to the credential: not paid again', async () => {
    const error = await failure(client().callTool('refuses'));
    expect((error as McpToolError).rpcCode).toBe(-32043);
    expect((error as McpToolError).receipt?.amountMsat).toBe(1000);
    expect(t.wallet.invoices).toHaveLength(1);
  });

  it('a receipt for another payment is not taken; the result is', async () => {
    const { result, receipt } = await client().callTool('wrong_receipt');
    expect(result.content).toEqual([{ type: 'text', text: 'served' }]);
    expect(receipt?.serverReceipt).toBeUndefined();
    expect(receipt?.serverReceiptProblem).toMatch(/another payment/);
  });

  it('an honest paid tool: result and receipt', async () => {
    const { receipt } = await client().callTool('honest');
    expect(receipt?.serverReceipt?.reference).toBe(receipt?.paymentHash);
  });
});

describe('answers too large to hold', () => {
  it('2 MiB of paid content: cut at maxAnswerBytes, the call fails saying what it paid', async () => {
    const error = await failure(client({ maxAnswerBytes: 256 * 1024 }).callTool('huge'));
    expect(error).toBeInstanceOf(McpTransportError);
    expect((error as McpTransportError).message).toMatch(/more than 262144 bytes/);
    expect((error as McpTransportError).receipt?.amountMsat).toBe(1000);
    expect(t.wallet.invoices).toHaveLength(1);
  });

  it('an event stream without end: cut at maxAnswerBytes', async () => {
    const started = Date.now();
    const error = await failure(client({ maxAnswerBytes: 512 * 1024 }).callTool('endless_stream'));
    expect((error as McpTransportError).message).toMatch(/more than 524288 bytes/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('an event stream without end, within the limit: the timeout ends it', async () => {
    const error = await failure(client({ timeoutMs: 500 }).callTool('endless_stream'));
    expect(error).toBeInstanceOf(McpTransportError);
    expect(((error as McpTransportError).cause as Error).name).toBe('TimeoutError');
  });

  it('a 2 MiB listing is refused; endless pages stop at 20', async () => {
    t.server.listing = 'huge';
    expect(await failure(client({ maxAnswerBytes: 1024 * 1024 }).listTools())).toBeInstanceOf(McpTransportError);
    t.server.listing = 'endless-pages';
    t.server.listPages = 0;
    const tools = await client().listTools();
    expect(t.server.listPages).toBe(20);
    expect(tools).toHaveLength(20);
  });

  it('the listing states each price', async () => {
    const tools = await client().listTools();
    expect(tools.find((tool) => tool.name === 'honest')?.price).toEqual({
      sats: 1,
      intent: 'charge',
      intents: ['charge'],
      method: 'lightning',
      key: 'dev.l402paywall/price',
    });
  });
});
