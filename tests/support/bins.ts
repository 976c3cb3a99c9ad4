// The packages' commands run as their users run them: a child process of the
// real bin, under tsx (its `l402-paywall` imports resolve to the library's
// sources through tsconfig.json's paths), with no wallet setting of the
// machine running the tests.
import { execFile, spawn, type ChildProcessByStdio } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';

/**
 * The source of the command a package's manifest names (`bin`), found by the
 * package's name as a user's install finds it: the manifest points at
 * dist/<name>.js, built from src/<name>.ts, which tsx runs here (the name
 * resolves to the sources, as tsconfig.json's paths say), so no build is needed.
 */
function commandSource(packageName: string, command: string): string {
  const manifestPath = createRequire(import.meta.url).resolve(`${packageName}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin: string | Record<string, string> };
  const built = typeof bin === 'string' ? bin : bin[command];
  const source = built?.replace(/^(\.\/)?dist\/(.+)\.js$/, 'src/$2.ts');
  if (source === undefined || source === built) throw new Error(`${packageName}'s manifest names no built command ${command} (bin: ${JSON.stringify(bin)})`);
  return join(dirname(manifestPath), source);
}

/** `l402-paywall <url>` and `l402-paywall mcp`. */
export const L402_BIN = commandSource('l402-paywall', 'l402-paywall');
/** `l402-mcp` (the MCP server as its own package, `npx -y l402-mcp`). */
export const L402_MCP_BIN = commandSource('l402-mcp', 'l402-mcp');

/** This process's environment without any wallet setting (a command run with it pays only with --dev). */
export function walletFreeEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(NWC_URL|LNBITS_|PHOENIXD_|LND_|CLN_|BLINK_|LIGHTNING_NETWORK)/.test(k)) env[k] = v;
  return { ...env, ...extra };
}

export interface BinRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `l402-paywall` with `args` to its end (at most 30 s). */
export function runBin(args: string[], env = walletFreeEnv()): Promise<BinRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', L402_BIN, ...args], { env, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr });
    });
  });
}

/** Starts `l402-paywall` with `args`, its output read as it comes (for a test that signals it mid-run). */
export function startBin(args: string[], env = walletFreeEnv()): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(process.execPath, ['--import', 'tsx', L402_BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** l402-mcp started by the MCP SDK's client over stdio (as an agent's host starts it), its stderr kept; `call` runs call_paid_api. */
export async function startMcp(args: string[], name = 'test-agent') {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', L402_MCP_BIN, ...args],
    env: walletFreeEnv(),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  await client.connect(transport);
  const call = async (url: string): Promise<Record<string, unknown> & { isError: boolean }> => {
    const result = (await client.callTool({ name: 'call_paid_api', arguments: { url } })) as { isError?: boolean; content: { text: string }[] };
    return { isError: result.isError === true, ...(JSON.parse(result.content[0]!.text) as Record<string, unknown>) };
  };
  return { client, transport, call, stderr: () => stderr };
}
