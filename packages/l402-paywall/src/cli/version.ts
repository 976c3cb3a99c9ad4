/** The package's version, as `--version` prints it and the MCP server names itself (tests/integration/cli.test.ts checks it against package.json). */
export const VERSION = '0.1.0';

/** `--help` prints `usage`, `--version` the version, on stdout; whether either was asked (the command then ends, exit 0). */
export function printedHelpOrVersion(values: { help?: boolean; version?: boolean }, usage: string, stdout: NodeJS.WritableStream): boolean {
  if (values.help) stdout.write(usage);
  else if (values.version) stdout.write(`${VERSION}\n`);
  return Boolean(values.help || values.version);
}
