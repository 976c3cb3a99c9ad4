// A stand-in for Upstash's REST endpoint in front of a real redis-server, so
// the Upstash store and @upstash/ratelimit are tested through the client they
// use in production, with real Redis semantics (atomic scripts, PX expiry).
//
// What @upstash/redis 1.39 expects (read from its HttpClient):
// - POST <url>/ with a JSON array ["set","k","v"], POST /pipeline and
//   /multi-exec with an array of such arrays; `Authorization: Bearer <token>`.
// - A single command answers {result} with 200, or {error} with a 4xx (the
//   client throws UpstashError carrying the message). Pipelines answer 200 with
//   one {result} or {error} per command.
// - With `Upstash-Encoding: base64` (the client's default) every string in a
//   result is base64, except the status "OK", which the client passes through
//   unchanged; integers and nulls stay JSON numbers and nulls; arrays nest.
// - Auto-pipelining is on by default in the client, so ordinary commands and
//   EVALSHA mostly arrive through /pipeline.
//
// @upstash/ratelimit >= 2.1 scripts begin with `#!lua flags=allow-key-locking`,
// a flag only Upstash knows; plain Redis refuses the script. The shebang line is
// cut (its newline kept, so Lua error line numbers still match the client's
// text) and the client's SHA1 of the original text is mapped to the SHA1 Redis
// knows. An unknown SHA goes through unchanged, so Redis answers NOSCRIPT and
// the client falls back to EVAL, as against Upstash.

import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { CLAIM_SCRIPT } from '../../src/stores/replay-scripts.js';

/** Whether `command` is the library's replay claim, as @upstash/redis sends it (EVAL with the script's text): what loseAnswers is told to lose. */
export const isReplayClaim = (command: string[]): boolean => /^eval$/i.test(command[0] ?? '') && command[1] === CLAIM_SCRIPT;

export interface UpstashRestServer {
  /** Base URL to give @upstash/redis, e.g. http://127.0.0.1:41234 */
  url: string;
  token: string;
  close(): Promise<void>;
  /**
   * The next `count` requests holding a command that `matches` run on Redis
   * as usual, then lose their answer: the connection is cut before a byte of
   * it is sent (`cut`: a reply lost on its way back), or left open with no
   * answer until the client gives up (`stall`: a store that hangs).
   */
  loseAnswers(matches: (command: string[]) => boolean, count: number, how?: 'cut' | 'stall'): void;
  /** Requests whose answer was lost so far. */
  readonly answersLost: number;
}

export interface UpstashRestServerOptions {
  redisUrl: string;
  token: string;
  /** 0 (default) picks a free port; a test that closes the endpoint and opens it again passes the old one. */
  port?: number;
}

type CommandReply = { result: unknown } | { error: string };

const MAX_BODY_BYTES = 10 * 1024 * 1024;
const OK = Buffer.from('OK');

class BadRequest extends Error {}

function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}

function stripShebang(script: string): string {
  if (!script.startsWith('#!')) return script;
  const newline = script.indexOf('\n');
  return newline === -1 ? '' : script.slice(newline);
}

function parseCommand(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new BadRequest('ERR a command must be a non-empty JSON array');
  }
  return value.map((part) => {
    if (typeof part === 'string') return part;
    if (typeof part === 'number' || typeof part === 'boolean') return String(part);
    throw new BadRequest('ERR command arguments must be strings or numbers');
  });
}

function encodeReply(reply: unknown, base64: boolean): unknown {
  if (reply === null || reply === undefined) return null;
  if (typeof reply === 'number') return reply;
  if (typeof reply === 'string' || Buffer.isBuffer(reply)) {
    const bytes = typeof reply === 'string' ? Buffer.from(reply) : reply;
    if (!base64) return bytes.toString('utf8');
    return bytes.equals(OK) ? 'OK' : bytes.toString('base64');
  }
  if (Array.isArray(reply)) return reply.map((item) => encodeReply(item, base64));
  // An error nested in an array reply (e.g. from a script's table).
  if (reply instanceof Error) return reply.message;
  return String(reply);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) throw new BadRequest('ERR request body too large');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

export async function startUpstashRestServer(options: UpstashRestServerOptions): Promise<UpstashRestServer> {
  // RESP2 on purpose: Upstash answers as RESP2 would (a Lua `true` is 1),
  // and ioredis 6 speaks RESP3 by default.
  const redis = new Redis(options.redisUrl, {
    protocol: 2,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
  });
  // Commands fail while Redis is down (the outage tests); the events need no echo.
  redis.on('error', () => {});
  await redis.connect();

  const expected = Buffer.from(`Bearer ${options.token}`);
  // Client SHA1 (of the text with its shebang) -> SHA1 of what Redis was given.
  const redisShaOf = new Map<string, string>();

  let losing: { matches: (command: string[]) => boolean; count: number; how: 'cut' | 'stall' } | undefined;
  let answersLost = 0;

  function loadScript(script: string): string {
    const stripped = stripShebang(script);
    if (stripped !== script) redisShaOf.set(sha1(script), sha1(stripped));
    return stripped;
  }

  function redisSha(sha: string): string {
    return redisShaOf.get(sha.toLowerCase()) ?? sha;
  }

  /**
   * Rewrites script commands for Redis and says how to answer: SCRIPT LOAD
   * must report the SHA the client computed, not the one of the stripped text.
   */
  function translate(command: string[]): { args: string[]; result?: unknown } {
    const [name = '', ...rest] = command;
    const upper = name.toUpperCase();
    if ((upper === 'EVAL' || upper === 'EVAL_RO') && rest[0] !== undefined) {
      return { args: [name, loadScript(rest[0]), ...rest.slice(1)] };
    }
    if ((upper === 'EVALSHA' || upper === 'EVALSHA_RO') && rest[0] !== undefined) {
      return { args: [name, redisSha(rest[0]), ...rest.slice(1)] };
    }
    if (upper === 'SCRIPT' && rest[0]?.toUpperCase() === 'LOAD' && rest[1] !== undefined) {
      return { args: [name, rest[0], loadScript(rest[1])], result: sha1(rest[1]) };
    }
    if (upper === 'SCRIPT' && rest[0]?.toUpperCase() === 'EXISTS') {
      return { args: [name, rest[0], ...rest.slice(1).map(redisSha)] };
    }
    return { args: command };
  }

  async function runOne(command: string[], base64: boolean): Promise<CommandReply> {
    const { args, result } = translate(command);
    const [name = '', ...rest] = args;
    try {
      const reply = await redis.callBuffer(name, ...rest);
      return { result: encodeReply(result ?? reply, base64) };
    } catch (error) {
      return { error: errorMessage(error) };
    }
  }

  async function runTransaction(commands: string[][], base64: boolean): Promise<CommandReply[]> {
    const transaction = redis.multi();
    const overrides = commands.map((command) => {
      const { args, result } = translate(command);
      const [name = '', ...rest] = args;
      transaction.callBuffer(name, ...rest);
      return result;
    });
    // Rejects with EXECABORT when a command could not even be queued.
    const replies = (await transaction.exec()) ?? [];
    return replies.map(([error, reply], i) => (error ? { error: errorMessage(error) } : { result: encodeReply(overrides[i] ?? reply, base64) }));
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const authorization = Buffer.from(request.headers.authorization ?? '');
    if (authorization.length !== expected.length || !timingSafeEqual(authorization, expected)) {
      send(response, 401, { error: 'Unauthorized' });
      return;
    }
    if (request.method !== 'POST') {
      send(response, 405, { error: 'ERR only POST is supported by this test server' });
      return;
    }
    const path = new URL(request.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
    const base64 = String(request.headers['upstash-encoding'] ?? '').toLowerCase() === 'base64';

    let body: unknown;
    try {
      body = JSON.parse(await readBody(request));
    } catch (error) {
      send(response, 400, {
        error: error instanceof BadRequest ? error.message : 'ERR failed to parse command',
      });
      return;
    }

    const respond = (status: number, reply: unknown) => {
      if (!loseThis) send(response, status, reply);
      else {
        answersLost += 1;
        if (loseThis === 'cut') response.destroy(); // a stalled one is never answered: the client's timeout ends it, or close()
      }
    };
    let loseThis: 'cut' | 'stall' | undefined;
    if (losing && losing.count > 0) {
      const commands = path === '' ? [body] : Array.isArray(body) ? body : [];
      if (commands.some((command) => Array.isArray(command) && losing!.matches(command.map(String)))) {
        loseThis = losing.how;
        losing.count -= 1;
      }
    }
    try {
      if (path === '') {
        const reply = await runOne(parseCommand(body), base64);
        respond('error' in reply ? 400 : 200, reply);
      } else if (path === '/pipeline' || path === '/multi-exec') {
        if (!Array.isArray(body)) throw new BadRequest('ERR a pipeline must be a JSON array of commands');
        const commands = body.map(parseCommand);
        // One connection runs commands in the order they are written, so
        // sending them all at once keeps pipeline order.
        const replies = path === '/pipeline' ? await Promise.all(commands.map((command) => runOne(command, base64))) : await runTransaction(commands, base64);
        respond(200, replies);
      } else {
        send(response, 404, { error: `ERR unknown path ${path}` });
      }
    } catch (error) {
      send(response, error instanceof BadRequest ? 400 : 500, { error: errorMessage(error) });
    }
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) send(response, 500, { error: errorMessage(error) });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    token: options.token,
    async close() {
      // The client keeps connections alive; without this close() would wait for them.
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      // QUIT needs an answer; a Redis that is down (the outage tests) gets none.
      if (redis.status === 'ready') await redis.quit();
      else redis.disconnect();
    },
    loseAnswers(matches, count, how = 'cut') {
      losing = { matches, count, how };
    },
    get answersLost() {
      return answersLost;
    },
  };
}
