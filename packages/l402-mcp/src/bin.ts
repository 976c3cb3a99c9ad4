#!/usr/bin/env node
// `npx -y l402-mcp [options]`: the MCP server of `l402-paywall mcp`, as a
// package whose dependencies are everything it loads. npx installs a package's
// dependencies but never its optional peers, so `npx l402-paywall mcp` would
// start without @modelcontextprotocol/sdk (nor @getalby/sdk and ws for NWC_URL).
import { runMcpServer } from 'l402-paywall/mcp';

void runMcpServer(process.argv.slice(2), 'l402-mcp');
