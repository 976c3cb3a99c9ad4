// Metering by reported usage (docs/sessions.md, "Metering by reported usage"):
// work whose cost is known only once it is done (an LLM completion, billed by
// the tokens the model says it used) runs under a reservation on the
// request's session. Before forwarding, the estimate is reserved in one atomic
// step of the ledger (a balance that cannot cover it is asked for a top-up,
// and nothing is forwarded); the answer passes through as it comes (a JSON
// answer read whole, an SSE stream event by event); the usage it reports
// settles the reservation, the unused units going back to the balance, once.
// An answer that reports no usage, an upstream that breaks off, or a client
// that hangs up settles at the reservation, and the receipt and the session's
// events say so. A UsageMeter reads one shape of answer: openAiUsage() the
// OpenAI-compatible chat and completions APIs; another shape is a UsageMeter
// of its own.
import { z } from 'zod';
import type { AtReservation, ReservationSettled, SessionUse } from '../../core/metering.js';
import { readBoundedText } from '../../http/read-bounded.js';

/** What a usage meter reads: the units to reserve before forwarding, how to ask the upstream to report usage, and how to read it. */
export interface UsageMeter {
  /** Units to reserve for this request (e.g. max_tokens, else a default): a whole number above 0. `body` is the request's JSON, when it has one. */
  estimate(request: Request, body: unknown): number;
  /** The request to forward (e.g. one asking a streamed completion to report its usage); undefined: the request as it came. */
  prepare?(request: Request, body: unknown): Request | undefined;
  /** The units a JSON answer reports used; undefined when it reports none. */
  usageOfJson(answer: unknown): number | undefined;
  /** The units one SSE event's data reports used; undefined when it reports none (the last event that does counts). */
  usageOfEvent(data: string): number | undefined;
  /** Whether an SSE event is kept from the client: one it did not ask for (the usage event that `prepare` asked for). */
  hidesEvent?(data: string, body: unknown): boolean;
}

export interface MeterByUsageOptions {
  meter: UsageMeter;
  /** The session the work runs under; default the request's (getPaidRequest(request).session). */
  session?: SessionUse;
  /** The largest request body read for the estimate; default 8 MiB. A larger one is answered 413 and not forwarded. */
  maxRequestBytes?: number;
  /** The largest JSON (non-streamed) answer read for its usage; default 32 MiB. A larger one is answered 502 (settled at the reservation). */
  maxAnswerBytes?: number;
  /** Told of each settled reservation (the session's onSession hears of it too, in its `spent` batch). */
  onSettled?: (settled: ReservationSettled) => void;
  /** Sends the settled receipt as an SSE `payment-receipt` event after the stream's own end (`data: [DONE]`); default true. */
  receiptEvent?: boolean;
}

/** A JSON error answer `{ error, code }` with `status`. */
const refusal = (status: number, code: string, error: string, extra: Record<string, unknown> = {}) =>
  Response.json({ error, code, ...extra }, { status, headers: { 'cache-control': 'no-store' } });

const MIB = 1024 * 1024;
const encoder = new TextEncoder();

/**
 * Runs `forward` under a reservation on the request's session: reserves the
 * meter's estimate (a 402 asking for a top-up when the balance cannot cover
 * it, before `forward` is called), forwards, passes the answer through, reads
 * the usage it reports, settles the reservation to it and gives the rest
 * back. Settles at the reservation when the answer never reports usage, the
 * upstream breaks off mid-stream, or the client hangs up. An upstream that
 * fails (throws, or answers 4xx/5xx reporting no usage) did no work: its
 * reservation is settled to nothing (the request's own unit stays spent).
 */
export async function meterSessionByUsage(
  session: SessionUse | undefined,
  request: Request,
  forward: (request: Request) => Promise<Response>,
  options: MeterByUsageOptions,
): Promise<Response> {
  const { meter } = options;
  if (!meter || typeof meter.estimate !== 'function' || typeof meter.usageOfJson !== 'function' || typeof meter.usageOfEvent !== 'function')
    throw new TypeError('meterByUsage: options.meter must be a UsageMeter (openAiUsage(), or one of your own)');
  if (!session?.reserve)
    throw new TypeError(
      'meterByUsage: the request must be served under a session whose ledger keeps reservations (withL402 with `session`: memorySessionLedger() or scriptedSessionLedger)',
    );
  const body = await readJsonBody(request, options.maxRequestBytes ?? 8 * MIB);
  if (body === TOO_LARGE) return refusal(413, 'BODY_TOO_LARGE', 'The request body is too large to be metered');
  const units = meter.estimate(request, body);
  if (!Number.isSafeInteger(units) || units <= 0)
    throw new RangeError(`meterByUsage: the meter's estimate must be a whole number of units above 0, got ${units}`);

  let reserved: Awaited<ReturnType<NonNullable<SessionUse['reserve']>>>;
  try {
    reserved = await session.reserve(units);
  } catch {
    return refusal(503, 'STORE_UNAVAILABLE', 'Session store temporarily unavailable; send the request again');
  }
  if (!reserved.ok) {
    const requiredMsat = units * session.unitPriceSats * 1000;
    if (reserved.reason === 'insufficient' && session.topUpRefusal) return session.topUpRefusal(request, { balanceMsat: reserved.balanceMsat, requiredMsat });
    if (reserved.reason === 'insufficient')
      return refusal(402, 'INSUFFICIENT_BALANCE', 'The session balance does not cover this request: top it up', {
        balanceMsat: reserved.balanceMsat,
        requiredMsat,
      });
    return refusal(402, 'SESSION_CLOSED', 'The session is closed', { sessionId: session.id, reason: reserved.reason });
  }
  const { reservation } = reserved;
  const settle = async (usedUnits: number | undefined, reason?: AtReservation) => {
    const settled = await reservation.settle(usedUnits, reason);
    options.onSettled?.(settled);
    return settled;
  };

  let answer: Response;
  try {
    answer = await forward(meter.prepare?.(request, body) ?? request);
  } catch (error) {
    // Nothing came back: no work to charge for.
    await settle(0);
    throw error;
  }
  const type = answer.headers.get('content-type') ?? '';
  if (/^text\/event-stream/i.test(type) && answer.body) return meteredPassThrough(answer, body, session, settle, options);
  return settledJson(answer, meter, settle, options.maxAnswerBytes ?? 32 * MIB);
}

const TOO_LARGE = Symbol('too large');

/** The request's JSON body, read from a copy (the request is forwarded as it is); undefined when it has none or it is not JSON. */
async function readJsonBody(request: Request, limit: number): Promise<unknown> {
  if (!request.body || request.bodyUsed) return undefined;
  const read = await readBoundedText(request.clone().body, limit);
  if (!read.ok) return read.reason === 'too-large' ? TOO_LARGE : undefined;
  try {
    return JSON.parse(read.text) as unknown;
  } catch {
    return undefined;
  }
}

/** A whole (non-streamed) answer: read, its usage settled, then passed on as it came (a 4xx/5xx that reports none settles to nothing). */
async function settledJson(
  answer: Response,
  meter: UsageMeter,
  settle: (usedUnits: number | undefined, reason?: AtReservation) => Promise<ReservationSettled>,
  limit: number,
): Promise<Response> {
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = await readBytes(answer.body, limit);
  } catch {
    await settle(undefined, 'upstream-failed');
    return refusal(502, 'UPSTREAM_FAILED', 'The upstream answer broke off or was too large');
  }
  let usage: number | undefined;
  try {
    usage = meter.usageOfJson(JSON.parse(new TextDecoder().decode(bytes)));
  } catch {
    usage = undefined;
  }
  if (usage !== undefined) await settle(usage);
  else if (answer.status >= 400) await settle(0);
  else await settle(undefined, 'no-usage');
  const headers = new Headers(answer.headers);
  headers.delete('content-encoding');
  headers.set('content-length', String(bytes.byteLength));
  return new Response(answer.status === 204 || answer.status === 304 ? null : bytes, { status: answer.status, statusText: answer.statusText, headers });
}

async function readBytes(body: ReadableStream<Uint8Array> | null, limit: number): Promise<Uint8Array<ArrayBuffer>> {
  if (!body) return new Uint8Array();
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      reader.cancel().catch(() => {});
      throw new RangeError('too large');
    }
    parts.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.byteLength;
  }
  return all;
}

/** Where an SSE event ends: the first blank line (any of the three line ends, twice). */
const EVENT_END = /(\r\n|\r(?!$)|\n)(\r\n|\r(?!$)|\n)/;

/** One event's data: its `data:` lines joined (SSE), or undefined when it has none. */
function eventData(event: string): string | undefined {
  const lines = event.split(/\r\n|\r|\n/).filter((line) => line.startsWith('data:'));
  if (lines.length === 0) return undefined;
  return lines.map((line) => line.slice(line.startsWith('data: ') ? 6 : 5)).join('\n');
}

/**
 * An SSE answer passed through event by event while the usage events are
 * read; the reservation settled when the stream's end (`data: [DONE]`, held
 * back until then) or the stream itself ends, or the upstream breaks off, or
 * the client hangs up.
 */
function meteredPassThrough(
  answer: Response,
  requestBody: unknown,
  session: SessionUse,
  settle: (usedUnits: number | undefined, reason?: AtReservation) => Promise<ReservationSettled>,
  options: MeterByUsageOptions,
): Response {
  const { meter } = options;
  const upstream = answer.body!.getReader();
  const decoder = new TextDecoder();
  let pending = '';
  let usage: number | undefined;
  let settledOnce: Promise<ReservationSettled> | undefined;
  // The client hung up: nothing more is sent.
  let gone = false;
  const settleNow = (reason: AtReservation) => (settledOnce ??= settle(usage, usage === undefined ? reason : undefined));
  const receipt = async (settled: ReservationSettled) =>
    options.receiptEvent === false
      ? ''
      : `event: payment-receipt\ndata: ${JSON.stringify({
          method: 'lightning',
          reference: session.id,
          status: 'success',
          timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
          units: settled.chargedUnits,
          spent: settled.chargedUnits * session.unitPriceSats,
          settled: settled.settledAt === 'usage' ? 'usage' : 'at reservation',
          ...(settled.reason !== undefined && { settledBecause: settled.reason }),
        })}\n\n`;

  /** The text of the whole events in `pending` to send on (usage read, hidden ones left out, `[DONE]` sent once settled). */
  const passEvents = async (final: boolean): Promise<string> => {
    let out = '';
    for (;;) {
      const end = EVENT_END.exec(pending);
      if (!end && !(final && pending.length > 0)) return out;
      const event = end ? pending.slice(0, end.index + end[0].length) : pending;
      pending = end ? pending.slice(end.index + end[0].length) : '';
      const data = eventData(event);
      if (data === '[DONE]') {
        const settled = await settleNow('no-usage');
        out += event + (await receipt(settled));
        continue;
      }
      if (data !== undefined) {
        const used = meter.usageOfEvent(data);
        if (used !== undefined) usage = used;
        if (meter.hidesEvent?.(data, requestBody)) continue;
      }
      out += event;
    }
  };

  const stream = new ReadableStream<Uint8Array>({
    // Reads until there is something to send (a pull that enqueues nothing is not called again): a partial or hidden event sends nothing.
    async pull(controller) {
      for (;;) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await upstream.read();
        } catch (error) {
          // The upstream broke off: what was sent stays sent, and the reservation is charged whole unless the usage came.
          await settleNow('upstream-failed');
          controller.error(error);
          return;
        }
        if (gone) return;
        if (next.done) {
          pending += decoder.decode();
          let rest = await passEvents(true);
          if (!settledOnce) rest += await receipt(await settleNow('no-usage'));
          if (gone) return;
          if (rest) controller.enqueue(encoder.encode(rest));
          controller.close();
          return;
        }
        pending += decoder.decode(next.value, { stream: true });
        const out = await passEvents(false);
        if (gone) return;
        if (out) {
          controller.enqueue(encoder.encode(out));
          return;
        }
      }
    },
    async cancel(reason) {
      gone = true;
      await settleNow('client-gone');
      await upstream.cancel(reason).catch(() => {});
    },
  });
  const headers = new Headers(answer.headers);
  headers.delete('content-length');
  headers.delete('content-encoding');
  return new Response(stream, { status: answer.status, statusText: answer.statusText, headers });
}

// ---------------------------------------------------------------------------
// The OpenAI-compatible shape (chat completions, completions): OpenAI, vLLM,
// llama.cpp's server, Ollama's /v1, LiteLLM.

export interface OpenAiUsageOptions {
  /** Tokens reserved when the request names no max_completion_tokens or max_tokens; default 4096 (as Aperture does). */
  defaultReserveTokens?: number;
  /** Tokens per unit of the session (a unit's price buys this many); default 1. Usage is rounded up to whole units. */
  tokensPerUnit?: number;
  /** What is billed: `total_tokens` (prompt and completion, the default) or `completion_tokens` only. */
  count?: 'total' | 'completion';
}

const TokenCount = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const CompletionRequest = z.object({
  max_completion_tokens: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  max_tokens: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  stream: z.boolean().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).loose().nullish(),
});
const UsageReport = z.object({
  usage: z.object({ total_tokens: TokenCount.optional(), completion_tokens: TokenCount.optional() }).loose(),
  choices: z.array(z.unknown()).optional(),
});

/**
 * Meters OpenAI-compatible completions by the tokens they report: reserves
 * the request's max_completion_tokens (or max_tokens, else
 * `defaultReserveTokens`), asks a streamed completion to report its usage
 * (`stream_options.include_usage`) when the client did not (and keeps that
 * usage-only event from it), and reads `usage.total_tokens` (or
 * `completion_tokens`) from the JSON answer or the usage event.
 */
export function openAiUsage(options: OpenAiUsageOptions = {}): UsageMeter {
  const { defaultReserveTokens = 4096, tokensPerUnit = 1, count = 'total' } = options;
  for (const [name, value] of Object.entries({ defaultReserveTokens, tokensPerUnit }))
    if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`openAiUsage: ${name} must be a whole number above 0, got ${value}`);
  if (count !== 'total' && count !== 'completion') throw new TypeError(`openAiUsage: count must be "total" or "completion", got ${String(count)}`);
  const units = (tokens: number) => Math.ceil(tokens / tokensPerUnit);
  const completion = (body: unknown) => {
    const parsed = CompletionRequest.safeParse(body);
    return parsed.success ? parsed.data : undefined;
  };
  /** The client streams and did not ask for the usage: prepare asks for it, and its event is kept from the client. */
  const usageAdded = (body: unknown) => {
    const request = completion(body);
    return request?.stream === true && request.stream_options?.include_usage !== true;
  };
  const usageOf = (answer: unknown) => {
    const report = UsageReport.safeParse(answer);
    if (!report.success) return undefined;
    const tokens = count === 'total' ? report.data.usage.total_tokens : report.data.usage.completion_tokens;
    return tokens === undefined ? undefined : units(tokens);
  };
  const parse = (data: string): unknown => {
    if (!data.startsWith('{')) return undefined;
    try {
      return JSON.parse(data) as unknown;
    } catch {
      return undefined;
    }
  };
  return {
    estimate(_request, body) {
      const request = completion(body);
      return units(request?.max_completion_tokens ?? request?.max_tokens ?? defaultReserveTokens);
    },
    prepare(request, body) {
      if (!usageAdded(body)) return undefined;
      const json = body as Record<string, unknown>;
      const streamOptions = (json.stream_options ?? {}) as Record<string, unknown>;
      const headers = new Headers(request.headers);
      headers.delete('content-length');
      return new Request(request, { headers, body: JSON.stringify({ ...json, stream_options: { ...streamOptions, include_usage: true } }) });
    },
    usageOfJson: usageOf,
    usageOfEvent: (data) => usageOf(parse(data)),
    hidesEvent(data, body) {
      if (!usageAdded(body)) return false;
      const report = UsageReport.safeParse(parse(data));
      // Only the usage-only event (no choices) the client did not ask for: one that also carries choices passes.
      return report.success && (report.data.choices?.length ?? 0) === 0;
    },
  };
}
