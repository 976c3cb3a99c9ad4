/// <reference types="node" />
// How a command of the package runs as a process (the l402-paywall bin, and
// the l402-mcp package's bin through l402-paywall/mcp): its arguments and
// standard streams in, its exit code out, usage errors said in one line.
import { readFile } from 'node:fs/promises';
import type { Io } from './fetch-command.js';
import { EXIT, UsageError } from './settings.js';

export type Command = (args: string[], io: Io) => Promise<number>;

/** Runs `command` with this process's arguments and streams, then exits with its code. */
export async function runAsProcess(name: string, command: Command, args: string[] = process.argv.slice(2)): Promise<never> {
  const io: Io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, readFile: (path) => readFile(path) };
  let code: number;
  try {
    code = await command(args, io);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${name}: ${error.message}\n`);
      code = EXIT.USAGE;
    } else {
      process.stderr.write(`${name}: unexpected error: ${error instanceof Error ? error.message : String(error)}\n`);
      code = EXIT.UNEXPECTED;
    }
  }
  // Exit as soon as the work is done (fetch's idle keep-alive sockets would hold the process for seconds), once what was written has left.
  await Promise.all([process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write('', resolve))));
  process.exit(code);
}
