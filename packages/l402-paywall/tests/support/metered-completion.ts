// The metered completion the command line is tried with (issue 39): a
// session of 100 one-sat units opened by `l402-paywall <url> --dev <origin>
// --session` for a streamed completion (max_tokens 50) whose OpenAI-compatible
// upstream streams 8 chunks and reports 37 tokens, metered by reported usage
// (withL402 with meterByUsage, or the proxy's `meter: 'openai-usage'`).
import { expect } from 'vitest';
import type { BinRun } from './bin.js';
import { fakeOpenAi, type FakeOpenAi } from './fake-openai.js';

/** The upstream: 8 chunks, 37 tokens reported. */
export const completionUpstream = (): FakeOpenAi => fakeOpenAi({ totalTokens: 37, chunks: 8 });

/** The command line's arguments: the completion at `url`, paid from the dev wallet at `devOrigin` by a session of at most 100 sats. */
export function completionArgs(url: string, devOrigin: string): string[] {
  const body = JSON.stringify({ model: 'fake', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 50 });
  return [
    url,
    '--dev',
    devOrigin,
    '--session',
    '--max-sats',
    '1',
    '--max-deposit-sats',
    '100',
    '--budget-sats',
    '200',
    '-d',
    body,
    '-H',
    'content-type: application/json',
  ];
}

/** What the run says: the completion streamed whole with its receipt, 37 sats spent, 63 of the 100-sat deposit refunded and received; the upstream asked once. */
export function expectCompletionRun(run: BinRun, upstream: FakeOpenAi): void {
  expect(run.code, run.stderr).toBe(0);
  for (let i = 1; i <= 8; i++) expect(run.stdout).toContain(`word${i} `);
  expect(run.stdout).toContain('data: [DONE]');
  expect(run.stdout).toMatch(/event: payment-receipt\ndata: .*"units":37,"spent":37,"settled":"usage"/);
  expect(run.stderr).toMatch(/session ([0-9a-f]{64}): deposit paid, 100 sats/);
  expect(run.stderr).toMatch(/session [0-9a-f]{64} closed, refund 63 sats \(succeeded\); the wallet received 63 sats\n/);
  expect(run.stderr).toContain('l402-paywall: spent in all 37 sats (paid 100 sats, received back 63 sats)\n');
  expect(upstream.received).toHaveLength(1);
}
