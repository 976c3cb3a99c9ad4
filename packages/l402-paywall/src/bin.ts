#!/usr/bin/env node
/// <reference types="node" />
// The package's command line (Node only): `l402-paywall <url>` pays and
// fetches one URL; `l402-paywall tool <server-url> …` lists or calls an MCP
// server's paid tools; `l402-paywall mcp` runs the MCP server for agents;
// `l402-paywall proxy` sells another service.
import { fetchCommand } from './cli/fetch-command.js';
import { runAsProcess } from './cli/run.js';
import { UsageError } from './cli/settings.js';

void runAsProcess('l402-paywall', async (args, io) => {
  if (args[0] === 'tool') return (await import('./cli/tool-command.js')).toolCommand(args.slice(1), io);
  // `l402-paywall proxy`: sells a service as a reverse proxy (docs/proxy.md), loaded only when asked for.
  if (args[0] === 'proxy') return (await import('./cli/proxy-command.js')).proxyCommand(args.slice(1), io);
  if (args[0] !== 'mcp') return fetchCommand(args, io);
  let server: typeof import('./cli/mcp-server.js');
  try {
    server = await import('./cli/mcp-server.js');
  } catch (error) {
    // An optional peer dependency: the fetch command works without it. The l402-mcp package brings it.
    if (String((error as Error).message).includes('@modelcontextprotocol/sdk'))
      throw new UsageError(
        'l402-paywall mcp needs @modelcontextprotocol/sdk, which is not installed: run the MCP server with `npx -y l402-mcp [options]` (the same options, the SDK included), or npm install @modelcontextprotocol/sdk',
      );
    throw error;
  }
  return server.mcpCommand(args.slice(1), io);
});
