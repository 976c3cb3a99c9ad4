// The command line as a child process: the bin from source under tsx, with
// none of the machine's backend, store or secret settings.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const BIN = fileURLToPath(new URL('../../src/bin.ts', import.meta.url));

/** The environment without any backend or store setting of the machine's. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(NWC_URL|LNBITS_|PHOENIXD_|LND_|CLN_|BLINK_|LIGHTNING_|L402_SECRET|REDIS_URL|UPSTASH_|KV_REST_|NODE_ENV)/.test(k)) env[k] = v;
  return { ...env, ...extra };
}

export interface BinRun {
  /** The exit code; null when it was killed (after a minute). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `l402-paywall ...args` to its end (killed after a minute). */
export function runBin(args: string[], env = cleanEnv()): Promise<BinRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `l402-paywall mcp ...args` as an MCP server on stdio, for the MCP SDK's client (its stderr dropped). */
export function mcpBinTransport(args: string[]): StdioClientTransport {
  return new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', BIN, 'mcp', ...args], env: cleanEnv(), stderr: 'ignore' });
}

/** What a tool of `l402-paywall mcp` answers. */
export interface ToolResult {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
}

/** The JSON a tool answered as its text. */
export const toolJson = (result: ToolResult) => JSON.parse(result.content[0]!.text) as Record<string, unknown>;

export interface McpBin {
  client: Client;
  call(tool: string, args: Record<string, unknown>): Promise<ToolResult>;
  close(): Promise<void>;
}

/** The MCP SDK's client (named `clientName`) connected to `l402-paywall mcp ...args`. */
export async function connectMcpBin(clientName: string, args: string[]): Promise<McpBin> {
  const client = new Client({ name: clientName, version: '1.0.0' });
  await client.connect(mcpBinTransport(args));
  return {
    client,
    call: async (tool, args) => (await client.callTool({ name: tool, arguments: args })) as ToolResult,
    close: () => client.close(),
  };
}
