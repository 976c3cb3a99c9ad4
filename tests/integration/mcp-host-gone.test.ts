// The MCP server (the l402-mcp package's bin) when its host goes away without
// closing the server's stdin first: the host's end of the server's stdout is
// closed, so the server's next answer fails with EPIPE. It stops quietly, as
// when its stdin ends: its session closed (refunded), exit 0, no stack trace.
// Spoken to in raw JSON-RPC lines (the SDK's client owns its pipes), against
// the demo of the real local server, paid with the service's dev wallet.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { L402_MCP_BIN, walletFreeEnv } from '../support/bins.js';
import { useDemoServer } from '../support/demo-sessions.js';

const { server, ledgerSession } = useDemoServer('mcp-host-gone-secret-0123456789abcdef0123456789ab');

describe('l402-mcp when its host disconnects', () => {
  it('its stdout closed by the host: the next answer hits EPIPE; it closes its session and exits 0, with no stack trace', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', L402_MCP_BIN, '--dev', server.url, '--sessions', '--max-sats', '1', '--budget-sats', '40'], {
      env: walletFreeEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    try {
      const answers = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const send = (message: Record<string, unknown>) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
      const answer = async (id: number) => {
        for (;;) {
          const { value, done } = await answers.next();
          if (done) throw new Error(`stdout ended before answer ${id}; stderr: ${stderr}`);
          const message = JSON.parse(value) as { id?: number; result?: { content: { text: string }[] } };
          if (message.id === id) return message;
        }
      };
      send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'host', version: '1' } } });
      await answer(1);
      send({ method: 'notifications/initialized' });
      send({ id: 2, method: 'tools/call', params: { name: 'call_paid_api', arguments: { url: `${server.url}/api/demo/btc-price` } } });
      const called = JSON.parse((await answer(2)).result!.content[0]!.text) as { status: number; session?: { action: string; session_id: string } };
      expect(called).toMatchObject({ status: 200, session: { action: 'open' } });
      const sessionId = called.session!.session_id;

      // The host goes: its end of the server's stdout is closed, the server's stdin still open.
      child.stdout.destroy();
      send({ id: 3, method: 'tools/list' });
      const { code, signal } = await exited;
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      expect(stderr).not.toMatch(/EPIPE|Error|node:| {4}at /);
      expect(stderr).toContain(`l402-mcp: session ${sessionId} at ${server.url} closed: refund`);
      expect(stderr).toContain('l402-mcp: spent in all');
      expect(await ledgerSession(sessionId)).toMatchObject({ status: 'closed', spentMsat: 1000 });
    } finally {
      child.kill();
      await exited;
    }
  });
});
