// The command line (`l402-paywall <url> --session`) and the MCP server
// (`l402-mcp --sessions`), the real bins as child processes with the dev
// wallet, against a seller of prepaid sessions that cheats
// (tests/support/hostile-session-seller.ts): their stderr and tool results
// say what the wallet paid and what it received, to the sat, whatever the
// seller claims; a stream that asks for top-ups without delivering, or after
// every chunk, is stopped; a session refused for another reason than its
// balance is not replaced by new deposits.
import { afterEach, describe, expect, it } from 'vitest';
import { runBin, startMcp as startMcpOverStdio } from '../support/bins.js';
import { startHostileSeller, type HostileSeller } from '../../packages/l402-paywall/tests/support/hostile-session-seller.js';

const SAT = 1000;

let seller: HostileSeller | undefined;
afterEach(async () => {
  await seller?.close();
  seller = undefined;
});

/** The stderr line saying what the run spent, as numbers. */
function account(stderr: string): { spent: number; paid: number; received: number } {
  const line = /spent in all (\d+) sats? \(paid (\d+) sats?, received back (\d+) sats?\)\n/.exec(stderr);
  expect(line, stderr).not.toBeNull();
  const [, spent, paid, received] = line!.map(Number);
  return { spent: spent!, paid: paid!, received: received! };
}

/** The deposits and top-ups stderr says were paid, in sats. */
const depositsSaid = (stderr: string) => [...stderr.matchAll(/: (deposit|top-up) paid, (\d+) sats/g)].map((m) => `${m[1]}:${m[2]}`);

describe('l402-paywall <url> --session against a hostile seller', () => {
  it('a close that claims a refund it did not pay: stderr says the wallet received nothing, and spent in all is what the wallet paid', async () => {
    seller = await startHostileSeller();
    const run = await runBin([`${seller.url}/lying-close`, '--dev', seller.url, '--session', '--max-sats', '1', '--budget-sats', '100']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      /session [0-9a-f]{64} closed, refund 20 sats \(succeeded\); the wallet received nothing \(the wallet had not received it 3 s after the close/,
    );
    expect(account(run.stderr)).toEqual({ spent: 20, paid: 20, received: 0 });
    expect(seller.walletPaidMsat()).toBe(20 * SAT);
    expect(await seller.walletReceivedMsat()).toBe(0);
  });

  it('a stream asking again for a top-up before any chunk: the deposit and one top-up paid, then exit 3 (TOP_UP_REFUSED); the totals are the wallet’s', async () => {
    seller = await startHostileSeller();
    const run = await runBin([`${seller.url}/endless-topup`, '--dev', seller.url, '--session', '--max-sats', '1', '--budget-sats', '1000']);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toMatch(
      /the stream stopped at a top-up: Not paid: .* asked for another top-up of session [0-9a-f]{64} before sending a chunk for the last one \[TOP_UP_REFUSED\]/,
    );
    expect(depositsSaid(run.stderr)).toEqual(['deposit:20', 'top-up:20']);
    expect(seller.walletPaid).toHaveLength(2);
    const received = (await seller.walletReceivedMsat()) / SAT;
    expect(run.stderr).toMatch(new RegExp(`closed, refund 39 sats \\(succeeded\\); the wallet received ${received} sats\\n`));
    expect(account(run.stderr)).toEqual({ spent: 40 - received, paid: 40, received });
  });

  it('a stream asking for a top-up after every chunk: ten top-ups, then exit 3; each one on stderr, and the totals the wallet’s', async () => {
    seller = await startHostileSeller();
    const run = await runBin([`${seller.url}/topup-per-chunk`, '--dev', seller.url, '--session', '--max-sats', '1', '--budget-sats', '1000']);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain('at most 10 top-ups');
    expect(depositsSaid(run.stderr)).toEqual(['deposit:20', ...Array(10).fill('top-up:20')]);
    expect(seller.walletPaidMsat()).toBe(220 * SAT);
    const received = (await seller.walletReceivedMsat()) / SAT;
    expect(account(run.stderr)).toEqual({ spent: 220 - received, paid: 220, received });
  });
});

/** l402-mcp over stdio; `stop` closes stdin, as a host does, and waits for the run's last line. */
async function startMcp(args: string[]) {
  const mcp = await startMcpOverStdio(args, 'hostile-session-agent');
  const stop = async () => {
    await mcp.client.close();
    for (let i = 0; i < 200 && !/spent in all/.test(mcp.stderr()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    return mcp.stderr();
  };
  return { call: mcp.call, stop };
}

describe('l402-mcp --sessions against a hostile seller', () => {
  it('20 calls whose bearers are refused for another reason, and a close that claims a refund: one deposit paid, and every result and stderr say so', async () => {
    seller = await startHostileSeller();
    const mcp = await startMcp(['--dev', seller.url, '--sessions', '--max-sats', '1', '--budget-sats', '100']);
    const first = await mcp.call(`${seller.url}/refuses-bearer`);
    expect(first).toMatchObject({ isError: false, status: 200, sats_paid: 20, session: { action: 'open' }, session_spent_sats: 20 });
    for (let i = 2; i <= 20; i++) {
      const refused = await mcp.call(`${seller.url}/refuses-bearer`);
      expect(refused).toMatchObject({ isError: true, code: 'SESSION_REFUSED', serverCode: 'WRONG_ROUTE', session_spent_sats: 20 });
    }
    const stderr = await mcp.stop();
    expect(depositsSaid(stderr)).toEqual(['deposit:20']);
    expect(stderr).toMatch(/closed: refund 20 sats \(succeeded\); the wallet received nothing/);
    expect(account(stderr)).toEqual({ spent: 20, paid: 20, received: 0 });
    expect(seller.walletPaidMsat()).toBe(20 * SAT);
    expect(await seller.walletReceivedMsat()).toBe(0);
  });

  it('a streamed call asking for top-ups without delivering ends with TOP_UP_REFUSED, its spending the wallet’s', async () => {
    seller = await startHostileSeller();
    const mcp = await startMcp(['--dev', seller.url, '--sessions', '--max-sats', '1', '--budget-sats', '1000']);
    const result = await mcp.call(`${seller.url}/endless-topup`);
    expect(result).toMatchObject({ isError: true, code: 'TOP_UP_REFUSED', refused: true, session_spent_sats: 40 });
    expect(seller.walletPaidMsat()).toBe(40 * SAT);
    const stderr = await mcp.stop();
    expect(depositsSaid(stderr)).toEqual(['deposit:20', 'top-up:20']);
    const received = (await seller.walletReceivedMsat()) / SAT;
    expect(account(stderr)).toEqual({ spent: 40 - received, paid: 40, received });
  });
});
