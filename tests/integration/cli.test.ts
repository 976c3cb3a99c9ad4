// The package's command line, run as a user runs it (a child process, the
// real bin), against the real local server: it pays the demo with --dev,
// refuses above --max-sats, and says so with its documented exit codes.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { useDevServer } from '../support/server.js';
import { closedPort } from '../support/postgres.js';

const BIN = fileURLToPath(new URL('../../packages/l402-paywall/src/bin.ts', import.meta.url));
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

  it('payment failed (the dev wallet cannot be reached): exit 4', async () => {
    const { code, stderr } = await runBin([`${server.url}/api/demo/btc-price`, '--dev', `http://127.0.0.1:${await closedPort()}`, '--max-sats', '5']);
    expect(code).toBe(4);
    expect(stderr).toContain('[PAYMENT_OUTCOME_UNKNOWN]');
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
