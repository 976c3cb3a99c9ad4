// The command line against a completion metered by reported usage (issue 39,
// "Done when"): `l402-paywall <url> --dev <url> --session` opens a 100-sat
// session on a withL402 route that forwards to an OpenAI-compatible upstream
// under meterByUsage; a streamed completion (max_tokens 50) whose upstream
// reports 37 tokens is printed whole, and the run reports 37 sats spent and a
// 63-sat refund. A child process under tsx: on the slow list.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { createDevNode, createDevPayHandler, createDevReceiveHandler, memoryDevNodeStore } from 'l402-paywall/backends';
import { memoryReplayStore, withL402 } from 'l402-paywall';
import { lightningSessions, memorySessionLedger, meterByUsage, openAiUsage } from 'l402-paywall/sessions';
import { fakeOpenAi, listen } from '../support/fake-openai.js';

const BIN = fileURLToPath(new URL('../../src/bin.ts', import.meta.url));

it('a streamed completion reporting 37 tokens on a 100-sat deposit: streamed whole, 37 sats spent, 63 refunded', async () => {
  const net = memoryDevNodeStore();
  const serverNode = createDevNode({ store: net });
  const walletNode = createDevNode({ store: net });
  const ledger = memorySessionLedger();
  const upstream = fakeOpenAi({ totalTokens: 37, chunks: 8 });
  const completions = withL402((request) => meterByUsage(request, (outgoing) => upstream.fetch(outgoing), { meter: openAiUsage() }), {
    priceSats: 1,
    provider: serverNode,
    secret: 'usage-metering-cli-secret-0123456789abcdef01234567',
    replayStore: memoryReplayStore(),
    onError: () => {},
    session: lightningSessions({ unitPriceSats: 1, depositUnits: 100, idleTimeoutSeconds: 600, ledger }),
  });
  const pay = createDevPayHandler(walletNode);
  const receive = createDevReceiveHandler(walletNode);
  const shop = await listen((request) => {
    const { pathname } = new URL(request.url);
    if (pathname === '/api/dev/pay') return pay(request);
    if (pathname.startsWith('/api/dev/receive')) return receive(request);
    if (pathname === '/v1/chat/completions') return completions(request);
    return new Response('not found', { status: 404 });
  });
  try {
    const body = JSON.stringify({ model: 'fake', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 50 });
    const args = [`${shop.url}/v1/chat/completions`, '--dev', shop.url, '--session', '--max-sats', '1', '--max-deposit-sats', '100', '--budget-sats', '200'];
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', BIN, ...args, '-d', body, '-H', 'content-type: application/json'],
        { timeout: 30_000 },
        (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    for (let i = 1; i <= 8; i++) expect(run.stdout).toContain(`word${i} `);
    expect(run.stdout).toContain('data: [DONE]');
    expect(run.stdout).toMatch(/event: payment-receipt\ndata: .*"units":37,"spent":37,"settled":"usage"/);
    expect(run.stderr).toMatch(/session ([0-9a-f]{64}): deposit paid, 100 sats/);
    expect(run.stderr).toMatch(/session [0-9a-f]{64} closed, refund 63 sats \(succeeded\); the wallet received 63 sats\n/);
    expect(run.stderr).toContain('l402-paywall: spent in all 37 sats (paid 100 sats, received back 63 sats)\n');
    expect(upstream.received).toHaveLength(1);
  } finally {
    await shop.close();
  }
}, 60_000);
