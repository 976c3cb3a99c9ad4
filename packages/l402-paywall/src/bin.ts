#!/usr/bin/env node
/// <reference types="node" />
// The package's command line (Node only): `l402-paywall <url>` pays and
// fetches one URL; `l402-paywall mcp` runs the MCP server for agents.
import { readFile } from 'node:fs/promises';
import { EXIT, UsageError } from './cli/settings.js';
import { fetchCommand, type Io } from './cli/fetch-command.js';

async function main(args: string[]): Promise<number> {
  const io: Io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, readFile: (path) => readFile(path) };
  try {
    if (args[0] === 'mcp') {
      let server: typeof import('./cli/mcp-server.js');
      try {
        server = await import('./cli/mcp-server.js');
      } catch (error) {
        // An optional peer dependency: the fetch command works without it.
        if (String((error as Error).message).includes('@modelcontextprotocol/sdk'))
          throw new UsageError('l402-paywall mcp needs @modelcontextprotocol/sdk: npm install @modelcontextprotocol/sdk');
        throw error;
      }
      return await server.mcpCommand(args.slice(1), io);
    }
    return await fetchCommand(args, io);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`l402-paywall: ${error.message}\n`);
      return EXIT.USAGE;
    }
    process.stderr.write(`l402-paywall: unexpected error: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.UNEXPECTED;
  }
}

// Exit as soon as the work is done (fetch's idle keep-alive sockets would hold the process for seconds), once what was written has left.
main(process.argv.slice(2)).then(async (code) => {
  await Promise.all([process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write('', resolve))));
  process.exit(code);
});
