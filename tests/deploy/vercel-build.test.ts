// The deployment as Vercel builds it: `vercel build` (the CLI from npm, pinned
// in package.json) runs offline over a copy of the project, with the minimal
// project settings checked in next to this file, and the Build Output API
// result is checked against the repository: one function per api/ file, the
// crons and rewrites of vercel.json, the migrations bundled, and a built
// function answering a request (the demo's 402). Slow (minutes: every
// function is compiled and traced), so it is all in this one file.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD_TIMEOUT_MS = 20 * 60_000;

/**
 * Build steps Vercel runs before bundling the functions, run in the project
 * root first: the root `build` script builds the l402-paywall package to its
 * dist/, which the functions import by name.
 */
const BUILD_STEPS: Array<[string, string[]]> = [['npm', ['run', 'build']]];

interface FunctionConfig {
  handler: string;
  runtime: string;
  filePathMap?: Record<string, string>;
}

let copy = '';
let output = '';

beforeAll(async () => {
  for (const [command, args] of BUILD_STEPS) await run(command, args, { cwd: projectRoot, timeout: BUILD_TIMEOUT_MS });
  // The files git would deploy (tracked and new, not ignored), not the working tree's leftovers.
  copy = mkdtempSync(join(tmpdir(), 'l402-vercel-build-'));
  const { stdout } = await run('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: projectRoot, maxBuffer: 64 * 1024 * 1024 });
  for (const file of stdout.split('\0').filter(Boolean)) {
    if (!existsSync(join(projectRoot, file))) continue; // deleted in the working tree
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    cpSync(join(projectRoot, file), join(copy, file));
  }
  symlinkSync(join(projectRoot, 'node_modules'), join(copy, 'node_modules'));
  mkdirSync(join(copy, '.vercel'));
  cpSync(join(projectRoot, 'tests/deploy/vercel-project.json'), join(copy, '.vercel/project.json'));
  const vercel = join(projectRoot, 'node_modules/.bin/vercel');
  try {
    await run(vercel, ['build', '--yes'], {
      cwd: copy,
      timeout: BUILD_TIMEOUT_MS,
      maxBuffer: 64 * 1024 * 1024,
      // Offline: no telemetry, no update check, no token; the settings come from .vercel/project.json.
      env: { ...process.env, VERCEL_TELEMETRY_DISABLED: '1', NO_UPDATE_NOTIFIER: '1', CI: '1' },
    });
  } catch (error) {
    const { stdout: out = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`vercel build failed:\n${out.slice(-4000)}\n${stderr.slice(-4000)}`);
  }
  output = join(copy, '.vercel/output');
}, BUILD_TIMEOUT_MS);

// The output holds every function with its traced node_modules: hundreds of MB to delete.
afterAll(async () => {
  if (copy) await rm(copy, { recursive: true, force: true });
}, 5 * 60_000);

/** api/ files as Vercel sees them: .ts/.js, not .d.ts, nothing under _ or . names. */
function apiFiles(dir = join(projectRoot, 'api')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name.startsWith('_') || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return apiFiles(path);
    return /\.(ts|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [relative(projectRoot, path)] : [];
  });
}

function builtFunctions(dir = join(output, 'functions')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && entry.name.endsWith('.func')) return [relative(join(output, 'functions'), path).replace(/\.func$/, '')];
    return entry.isDirectory() ? builtFunctions(path) : [];
  });
}

const functionConfig = (name: string) => JSON.parse(readFileSync(join(output, 'functions', `${name}.func`, '.vc-config.json'), 'utf8')) as FunctionConfig;

describe('vercel build (offline, the pinned CLI)', () => {
  it('builds one Node.js function per api/ file, and nothing else', () => {
    const expected = apiFiles()
      .map((file) => file.replace(/\.(ts|js)$/, ''))
      .sort();
    expect(expected.length).toBeGreaterThan(10);
    expect(builtFunctions().sort()).toEqual(expected);
    for (const name of expected) expect(functionConfig(name).runtime).toMatch(/^nodejs\d+\.x$/);
  });

  it("carries vercel.json's crons, rewrites and headers into the routing", () => {
    const vercelJson = JSON.parse(readFileSync(join(projectRoot, 'vercel.json'), 'utf8')) as { crons: unknown[] };
    const config = JSON.parse(readFileSync(join(output, 'config.json'), 'utf8')) as {
      crons: unknown[];
      routes: Array<{ src?: string; dest?: string; headers?: Record<string, string> }>;
    };
    expect(config.crons).toEqual(vercelJson.crons);
    const rewrite = (path: string) => config.routes.find((route) => route.dest !== undefined && route.src !== undefined && new RegExp(route.src).test(path));
    expect(rewrite('/.well-known/lnurlp/alice')?.dest).toBe('/api/lnurlp/$1');
    expect(rewrite('/favicon.ico')?.dest).toBe('/favicon.svg');
    const apiHeaders = config.routes.find((route) => route.headers?.['Access-Control-Allow-Origin'] === '*');
    expect(new RegExp(apiHeaders!.src!).test('/api/does-not-exist')).toBe(true);
    // The pages are static files, served as they are: every file under public/.
    for (const file of readdirSync(join(projectRoot, 'public'), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(join(projectRoot, 'public'), join(entry.parentPath, entry.name))))
      expect(existsSync(join(output, 'static', file))).toBe(true);
  });

  it('bundles every migration with every function (they are read at run time)', () => {
    const migrations = readdirSync(join(projectRoot, 'lib/db/migrations'))
      .filter((file) => file.endsWith('.sql'))
      .map((file) => `lib/db/migrations/${file}`);
    expect(migrations.length).toBeGreaterThan(0);
    for (const name of builtFunctions()) {
      const dir = join(output, 'functions', `${name}.func`);
      const mapped = Object.keys(functionConfig(name).filePathMap ?? {});
      for (const migration of migrations) expect(mapped.includes(migration) || existsSync(join(dir, migration)), `${name} carries ${migration}`).toBe(true);
    }
  });

  it("a built function answers a request: the demo's 402 with a real invoice", async () => {
    const handler = join(output, 'functions/api/demo/btc-price.func', functionConfig('api/demo/btc-price').handler);
    const dataDir = mkdtempSync(join(tmpdir(), 'l402-built-fn-'));
    // In a process of its own, from the built files only, with a local environment (the dev node).
    const script = `
      const { default: fn } = await import(${JSON.stringify(pathToFileURL(handler).href)});
      const response = await fn.fetch(new Request('http://127.0.0.1/api/demo/btc-price'));
      console.log(JSON.stringify({ status: response.status, wwwAuthenticate: response.headers.get('www-authenticate'), body: await response.json() }));
    `;
    const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(NODE_ENV|VERCEL|UPSTASH_|KV_|LIGHTNING_|DATABASE_URL|L402_)/.test(key)));
    try {
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
        cwd: dirname(handler),
        env: { ...clean, DATA_DIR: dataDir, BTC_PRICE_SOURCES: 'none', L402_SECRET: 'built-function-secret-0123456789abcdef' },
        timeout: 60_000,
      });
      const answer = JSON.parse(stdout.trim().split('\n').pop()!) as {
        status: number;
        wwwAuthenticate: string;
        body: { code: string; invoice: string; macaroon: string; priceSats: number };
      };
      expect(answer.status).toBe(402);
      expect(answer.wwwAuthenticate).toMatch(/^LSAT macaroon="[^"]+", invoice="[^"]+", L402 /);
      expect(answer.body).toMatchObject({ code: 'PAYMENT_REQUIRED', priceSats: 1 });
      expect(answer.body.invoice).toMatch(/^lnbcrt10n1/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
