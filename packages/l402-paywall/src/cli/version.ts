/** The package's version, as `--version` prints it and the MCP server names itself (tests/integration/cli.test.ts checks it against package.json). */
export const VERSION = '0.1.0';
