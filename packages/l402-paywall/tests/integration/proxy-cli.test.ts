// `l402-paywall proxy` as a process (the bin under tsx; the packed tarball's
// is tests/package's): `proxy <upstream> --price-sats 2 --dev` answers an
// unpaid request 402 and the upstream sees nothing; `l402-paywall --dev
// <proxy>` (another process) pays it and the request reaches the upstream
// once, intact; the same credential again is refused unforwarded. A bad
// configuration names its field and exits 2, and so do --dev in production
// and a missing backend. On the slow list: each process costs seconds of tsx.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cleanEnv, runBin } from '../support/bin.js';
import { listen } from '../support/listen.js';
import { completionArgs, completionUpstream, expectCompletionRun } from '../support/metered-completion.js';
import { payL402, recordingUpstream, type Upstream } from '../support/proxy-upstream.js';

interface RunningProxy {
  url: string;
  child: ChildProcessByStdio<null, Readable, Readable>;
  stderr(): string;
}

/** Starts `l402-paywall proxy ...args --port 0` and waits for its start-up lines (where it listens, what it sells, with what). */
function startProxy(args: string[]): Promise<RunningProxy> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', BIN, 'proxy', ...args, '--port', '0'], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk;
      const listening = /listening on (http:\/\/\S+),/.exec(stderr);
      // The last start-up line: where uses and sessions are kept.
      if (listening && /uses and sessions: .*\n/.test(stderr)) resolve({ url: listening[1]!, child, stderr: () => stderr });
    });
    child.on('close', (code) => reject(new Error(`the proxy exited ${code}: ${stderr}`)));
  });
}

function stop(proxy: RunningProxy): Promise<number | null> {
  return new Promise((resolve) => {
    proxy.child.removeAllListeners('close');
    proxy.child.on('close', (code) => resolve(code));
    proxy.child.kill('SIGTERM');
  });
}

let upstream: Upstream;
let proxy: RunningProxy;

beforeAll(async () => {
  upstream = await recordingUpstream();
  proxy = await startProxy([upstream.url, '--price-sats', '2', '--dev']);
}, 60_000);

afterAll(async () => {
  if (proxy) expect(await stop(proxy)).toBe(0);
  await upstream?.close();
});

describe('l402-paywall proxy <upstream> --price-sats 2 --dev', () => {
  it('says what it sells, and with what', () => {
    expect(proxy.stderr()).toContain(`selling ${upstream.url}`);
    expect(proxy.stderr()).toContain('/* (any method): 2 sat a request');
    expect(proxy.stderr()).toContain('the embedded dev node');
    expect(proxy.stderr()).toContain('uses and sessions: in memory');
  });

  it('answers an unpaid request 402 and the upstream sees nothing', async () => {
    const answer = await fetch(`${proxy.url}/echo`, { method: 'POST', body: 'unpaid' });
    expect(answer.status).toBe(402);
    expect(((await answer.json()) as { priceSats: number }).priceSats).toBe(2);
    expect(upstream.received).toHaveLength(0);
  });

  it('is paid by `l402-paywall --dev <proxy>`: the request reaches the upstream once, intact, without the credential', async () => {
    const before = upstream.received.length;
    const paid = await runBin(['--dev', proxy.url, '-X', 'PUT', '-d', '{"n":1}', '-H', 'X-Kept: yes', `${proxy.url}/echo?a=b`]);
    expect(paid.code, paid.stderr).toBe(0);
    expect(paid.stderr).toContain('paid 2 sats');
    expect(upstream.received).toHaveLength(before + 1);
    const got = upstream.received.at(-1)!;
    expect(got).toMatchObject({ method: 'PUT', url: '/echo?a=b', body: '{"n":1}' });
    expect(got.headers['x-kept']).toBe('yes');
    expect(got.headers.authorization).toBeUndefined();
    // The upstream's answer is what the command printed.
    expect(JSON.parse(paid.stdout)).toMatchObject({ method: 'PUT', url: '/echo?a=b' });
  }, 60_000);

  it('refuses the same credential again, unforwarded', async () => {
    const authorization = await payL402(proxy.url, await fetch(`${proxy.url}/echo`));
    expect((await fetch(`${proxy.url}/echo`, { headers: { authorization } })).status).toBe(201);
    const before = upstream.received.length;
    const again = await fetch(`${proxy.url}/echo`, { headers: { authorization } });
    expect(again.status).toBe(402);
    expect(((await again.json()) as { code: string }).code).toBe('TOKEN_ALREADY_USED');
    expect(upstream.received).toHaveLength(before);
  });
});

describe('l402-paywall proxy --config with a session route metered by reported usage', () => {
  it('a streamed completion (max_tokens 50) whose upstream reports 37 tokens: streamed whole to `l402-paywall --dev <proxy> --session`, 37 sats spent, 63 of the 100-sat deposit refunded', async () => {
    const upstream = completionUpstream();
    const served = await listen((request) => upstream.fetch(request));
    const dir = mkdtempSync(join(tmpdir(), 'l402-proxy-'));
    const file = join(dir, 'l402-proxy.json');
    // The configuration.
    writeFileSync(
      file,
      JSON.stringify({
        upstream: served.url,
        routes: [
          { path: '/v1/chat/completions', methods: ['POST'], session: { unitSats: 1, depositUnits: 100 }, meter: 'openai-usage' },
          { path: '/*', priceSats: 2 },
        ],
      }),
    );
    const metered = await startProxy(['--config', file, '--dev']);
    try {
      expect(metered.stderr()).toContain('/v1/chat/completions (POST): by the session, 1 sat a reported unit (meter openai-usage)');
      const paid = await runBin(completionArgs(`${metered.url}/v1/chat/completions`, metered.url));
      expectCompletionRun(paid, upstream);
      // Forwarded once, without the credential, asked for its usage.
      expect(upstream.received[0]!.headers.get('authorization')).toBeNull();
      expect(upstream.received[0]!.body).toMatchObject({ max_tokens: 50, stream: true });
    } finally {
      await stop(metered);
      await served.close();
    }
  }, 90_000);
});

describe('what stops it at start (exit 2)', () => {
  it('a configuration file that fails the schema, naming the bad field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'l402-proxy-'));
    const file = join(dir, 'l402-proxy.json');
    writeFileSync(
      file,
      JSON.stringify({
        upstream: 'http://127.0.0.1:1',
        routes: [
          { path: '/a', free: true },
          { path: '/*', priceSats: 0 },
        ],
      }),
    );
    const bad = await runBin(['proxy', '--config', file, '--dev']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`--config ${file}: routes[1].priceSats: Too small: expected number to be >=1`);
    writeFileSync(file, '{ not json');
    const notJson = await runBin(['proxy', '--config', file, '--dev']);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain('is not JSON');
  }, 60_000);

  it('--dev under a production NODE_ENV, and no backend without --dev', async () => {
    const production = await runBin(['proxy', 'http://127.0.0.1:1', '--price-sats', '1', '--dev'], cleanEnv({ NODE_ENV: 'production' }));
    expect(production.code).toBe(2);
    expect(production.stderr).toContain('never runs in production');
    const none = await runBin(['proxy', 'http://127.0.0.1:1', '--price-sats', '1']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Set LIGHTNING_PROVIDER');
    const noPrice = await runBin(['proxy', 'http://127.0.0.1:1', '--dev']);
    expect(noPrice.code).toBe(2);
    expect(noPrice.stderr).toContain('--price-sats');
  }, 60_000);
});
