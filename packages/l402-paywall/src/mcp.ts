/// <reference types="node" />
// `l402-paywall/mcp` (Node only): the MCP server of `l402-paywall mcp`, for
// programs that start it themselves, and the bin of the l402-mcp package
// (`npx -y l402-mcp`), which depends on @modelcontextprotocol/sdk so that npx
// installs it (npx never installs this package's optional peers).
import { mcpCommand } from './cli/mcp-server.js';
import { runAsProcess } from './cli/run.js';

export { mcpCommand, MCP_USAGE } from './cli/mcp-server.js';

/**
 * Runs the MCP server on this process's stdio with `args` (default: the
 * process's own), the options of `l402-paywall mcp`; exits when the client
 * hangs up. Errors are reported on stderr prefixed with `name`.
 */
export function runMcpServer(args: string[] = process.argv.slice(2), name = 'l402-mcp'): Promise<never> {
  return runAsProcess(name, (commandArgs, io) => mcpCommand(commandArgs, io, name), args);
}
