// One Model Context Protocol server over Streamable HTTP, from the calling
// side: JSON-RPC requests POSTed to one URL, each answered by JSON or by an
// event stream that carries the answer among other messages. Plain fetch
// rather than the MCP SDK's client: the client entry stays free of optional
// peers and edge-safe, every request goes through the caller's destination
// policy and deadline (send.ts), and every answer is read within a byte limit
// (a hostile server's endless stream is cut, not buffered). The session a
// stateful server hands out (Mcp-Session-Id) is kept and sent back; a
// stateless one (a Vercel function) hands out none.
import { discardBody } from '../http/discard-body.js';
import { readBoundedText } from '../http/read-bounded.js';
import { McpTransportError } from './mcp-errors.js';
import type { FetchWithL402Options } from './options.js';
import { fetchOf, sendOnce } from './send.js';

/** The MCP revision this client speaks first; the server's answer to initialize decides. */
export const MCP_PROTOCOL_VERSION = '2025-06-18';
/** The revisions this client can speak (Streamable HTTP came in 2025-03-26). */
const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];

/** A JSON-RPC error object as a server sent it. */
export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

/** A JSON-RPC answer: its result, or its error. */
export type RpcAnswer = { result: Record<string, unknown> } | { error: RpcError };

/** How a connection reaches its server: the client options' fetch, destinations and timeout, and the most of an answer read. */
export interface RpcOptions {
  options: Pick<FetchWithL402Options, 'fetch' | 'destinations' | 'timeoutMs'>;
  maxAnswerBytes: number;
  clientName: string;
  clientVersion: string;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export interface RpcConnection {
  readonly url: URL;
  /**
   * Sends one request (after initialize, the first time) and answers its
   * result or error; throws McpTransportError. `headers` go on its HTTP
   * request (a trace's traceparent, an agent's id), never over this client's own.
   */
  request(method: string, params: Record<string, unknown>, signal?: AbortSignal, headers?: Headers): Promise<RpcAnswer>;
  /** Ends the server's session, if it gave one (DELETE); never throws. */
  close(): Promise<void>;
}

/** A connection to the MCP server at `url`; nothing is sent until the first request. */
export function rpcConnection(url: URL, rpc: RpcOptions): RpcConnection {
  const doFetch = fetchOf(rpc.options as FetchWithL402Options);
  let sessionId: string | undefined;
  let protocolVersion: string | undefined;
  let initialized: Promise<void> | undefined;
  let nextId = 1;

  async function post(message: Record<string, unknown>, signal: AbortSignal | undefined, extra?: Headers): Promise<RpcAnswer | undefined> {
    const headers = new Headers(extra);
    headers.set('content-type', 'application/json');
    headers.set('accept', 'application/json, text/event-stream');
    if (sessionId !== undefined) headers.set('mcp-session-id', sessionId);
    if (protocolVersion !== undefined) headers.set('mcp-protocol-version', protocolVersion);
    const request = new Request(url, { method: 'POST', headers, body: JSON.stringify(message) });
    const response = await sendOnce(doFetch, rpc.options as FetchWithL402Options, request, undefined, signal);
    const given = response.headers.get('mcp-session-id');
    if (given !== null && /^[\x21-\x7e]{1,256}$/.test(given)) sessionId = given;
    const id = message.id;
    if (id === undefined) {
      discardBody(response.body);
      if (!response.ok) throw new McpTransportError(`${url.host} answered HTTP ${response.status} to ${String(message.method)}`, response.status);
      return undefined;
    }
    return readAnswer(response, id as number, url, rpc.maxAnswerBytes, String(message.method));
  }

  async function initialize(signal: AbortSignal | undefined): Promise<void> {
    const answer = await post(
      {
        jsonrpc: '2.0',
        id: nextId++,
        method: 'initialize',
        params: { protocolVersion: MCP_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: rpc.clientName, version: rpc.clientVersion } },
      },
      signal,
    );
    if (!answer || 'error' in answer)
      throw new McpTransportError(`${url.host} refused to initialize: ${answer && 'error' in answer ? answer.error.message : 'no answer'}`);
    const version = answer.result.protocolVersion;
    if (typeof version !== 'string' || !PROTOCOL_VERSIONS.includes(version))
      throw new McpTransportError(`${url.host} speaks MCP ${String(version).slice(0, 40)}, which this client does not`);
    protocolVersion = version;
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, signal);
  }

  return {
    url,
    async request(method, params, signal, headers) {
      // One initialize for the connection; a failed one is tried again by the next request.
      initialized ??= initialize(signal).catch((error: unknown) => {
        initialized = undefined;
        throw error;
      });
      await initialized;
      const answer = await post({ jsonrpc: '2.0', id: nextId++, method, params }, signal, headers);
      if (!answer) throw new McpTransportError(`${url.host} sent no answer to ${method}`);
      return answer;
    },
    async close() {
      if (sessionId === undefined) return;
      const headers = new Headers({ 'mcp-session-id': sessionId });
      if (protocolVersion !== undefined) headers.set('mcp-protocol-version', protocolVersion);
      sessionId = undefined;
      try {
        const answer = await sendOnce(doFetch, rpc.options as FetchWithL402Options, new Request(url, { method: 'DELETE', headers }), undefined);
        discardBody(answer.body);
      } catch {
        // the server forgets an idle session on its own
      }
    },
  };
}

/** The answer to request `id` in a response: its JSON body, or the event of its stream that carries it. */
async function readAnswer(response: Response, id: number, url: URL, maxBytes: number, method: string): Promise<RpcAnswer> {
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (!response.ok && type !== 'application/json') {
    discardBody(response.body);
    throw new McpTransportError(`${url.host} answered HTTP ${response.status} to ${method}`, response.status);
  }
  const tooLarge = () => new McpTransportError(`${url.host} answered ${method} with more than ${maxBytes} bytes; the rest was not read`, response.status);
  if (type === 'text/event-stream') {
    // Read until the event that answers this request: a server may send notifications first, and may keep the stream open after.
    let found: RpcAnswer | undefined;
    const read = await readBoundedText(response.body, maxBytes, {
      enough: (soFar) => (found = answerInEvents(soFar, id)) !== undefined,
    });
    if (!read.ok) throw read.reason === 'too-large' ? tooLarge() : new McpTransportError(`${url.host} answered ${method} with bytes that are not UTF-8`);
    found ??= answerInEvents(`${read.text}\n\n`, id);
    if (!found) throw new McpTransportError(`${url.host}'s event stream ended without an answer to ${method}`, response.status);
    return found;
  }
  if (type !== 'application/json') {
    discardBody(response.body);
    throw new McpTransportError(`${url.host} answered ${method} with ${type || 'no content type'}, not JSON-RPC`, response.status);
  }
  const read = await readBoundedText(response.body, maxBytes);
  if (!read.ok) throw read.reason === 'too-large' ? tooLarge() : new McpTransportError(`${url.host} answered ${method} with bytes that are not UTF-8`);
  let json: unknown;
  try {
    json = JSON.parse(read.text);
  } catch {
    throw new McpTransportError(`${url.host} answered ${method} with text that is not JSON`, response.status);
  }
  // A batch answer holds ours among others.
  const answer = (Array.isArray(json) ? json : [json]).map((message) => answerOf(message, id)).find((a) => a !== undefined);
  if (!answer) throw new McpTransportError(`${url.host} answered ${method} with no JSON-RPC answer to it (HTTP ${response.status})`, response.status);
  return answer;
}

/** The answer to `id` among the complete events of an event stream's text, if it has come. */
function answerInEvents(text: string, id: number): RpcAnswer | undefined {
  const events = text.split(/\r?\n\r?\n/);
  events.pop(); // the part after the last blank line is not complete yet
  for (const event of events) {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    if (!data) continue;
    try {
      const answer = answerOf(JSON.parse(data), id);
      if (answer) return answer;
    } catch {
      // not JSON: not ours
    }
  }
  return undefined;
}

/** A JSON-RPC answer to `id`, checked for shape; undefined for anything else (a notification, another id, a malformed one). */
function answerOf(message: unknown, id: number): RpcAnswer | undefined {
  if (!isObject(message) || message.jsonrpc !== '2.0' || message.id !== id) return undefined;
  if (isObject(message.error)) {
    const { code, message: text, data } = message.error;
    if (!Number.isSafeInteger(code) || typeof text !== 'string') return undefined;
    return { error: { code: code as number, message: text.slice(0, 2000), ...(data !== undefined && { data }) } };
  }
  return isObject(message.result) ? { result: message.result } : undefined;
}
