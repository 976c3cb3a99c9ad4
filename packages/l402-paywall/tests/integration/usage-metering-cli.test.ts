// The command line against a completion metered by reported usage (issue 39,
// "Done when"): `l402-paywall <url> --dev <url> --session` opens a 100-sat
// session on a withL402 route that forwards to an OpenAI-compatible upstream
// under meterByUsage; a streamed completion (max_tokens 50) whose upstream
// reports 37 tokens is printed whole, and the run reports 37 sats spent and a
// 63-sat refund. A child process under tsx: on the slow list.
import { it } from 'vitest';
import { createDevNode, createDevPayHandler, createDevReceiveHandler, memoryDevNodeStore } from 'l402-paywall/backends';
import { memoryReplayStore, withL402 } from 'l402-paywall';
import { lightningSessions, memorySessionLedger, meterByUsage, openAiUsage } from 'l402-paywall/sessions';
import { runBin } from '../support/bin.js';
import { listen } from '../support/listen.js';
import { completionArgs, completionUpstream, expectCompletionRun } from '../support/metered-completion.js';

it('a streamed completion reporting 37 tokens on a 100-sat deposit: streamed whole, 37 sats spent, 63 refunded', async () => {
  const net = memoryDevNodeStore();
  const serverNode = createDevNode({ store: net });
  const walletNode = createDevNode({ store: net });
  const ledger = memorySessionLedger();
  const upstream = completionUpstream();
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
    expectCompletionRun(await runBin(completionArgs(`${shop.url}/v1/chat/completions`, shop.url)), upstream);
  } finally {
    await shop.close();
  }
}, 60_000);
