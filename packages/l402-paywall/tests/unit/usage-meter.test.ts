// meterSessionByUsage's SSE pass-through and openAiUsage, on a session stub
// that records what it is asked to reserve and settle: events split across
// reads and a hidden usage event alone in its read still flow (a pull that
// sends nothing reads on), CRLF line ends, the estimate and what is billed.
import { describe, expect, it } from 'vitest';
import type { ReservationSettled, SessionUse } from '../../src/core/metering.js';
import { meterSessionByUsage, openAiUsage } from 'l402-paywall/sessions';

function recordingSession() {
  const settled: [number | undefined, string | undefined][] = [];
  const session: SessionUse = {
    id: 'f'.repeat(64),
    unitPriceSats: 2,
    spend: () => Promise.reject(new Error('not used')),
    async reserve(units) {
      return {
        ok: true,
        balanceMsat: 0,
        reservation: {
          id: 'r',
          units,
          async settle(usedUnits, reason): Promise<ReservationSettled> {
            settled.push([usedUnits, reason]);
            return usedUnits === undefined
              ? { reservedUnits: units, chargedUnits: units, settledAt: 'reservation', reason: reason ?? 'no-usage' }
              : { reservedUnits: units, usedUnits, chargedUnits: usedUnits, settledAt: 'usage' };
          },
        },
      };
    },
  };
  return { session, settled };
}

const sse = (parts: string[]) =>
  new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = parts.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(new TextEncoder().encode(next));
    },
  });

const completion = (body: Record<string, unknown>) =>
  new Request('https://llm.example/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('meterSessionByUsage on an SSE answer', () => {
  it('passes events split across reads, keeps the usage-only event it asked for from the client, and settles once to it', async () => {
    const { session, settled } = recordingSession();
    const usage = JSON.stringify({ choices: [], usage: { total_tokens: 9 } });
    const parts = [
      'data: {"choices":[{"delta":{"content":"a"}}]}\r',
      '\n\r\ndata: {"choi',
      'ces":[{"delta":{}}]}\n\n',
      `data: ${usage}\n\n`,
      'data: [DONE]\n\n',
    ];
    let forwarded: Request | undefined;
    const answer = await meterSessionByUsage(
      session,
      completion({ stream: true, max_tokens: 20 }),
      async (request) => {
        forwarded = request;
        return new Response(sse(parts), { headers: { 'content-type': 'text/event-stream' } });
      },
      { meter: openAiUsage() },
    );
    const text = await answer.text();
    expect(await forwarded!.json()).toMatchObject({ stream_options: { include_usage: true } });
    expect(
      text.startsWith('data: {"choices":[{"delta":{"content":"a"}}]}\r\n\r\ndata: {"choices":[{"delta":{}}]}\n\ndata: [DONE]\n\nevent: payment-receipt\n'),
    ).toBe(true);
    expect(text).not.toContain('total_tokens');
    expect(JSON.parse(/event: payment-receipt\ndata: (.*)\n/.exec(text)![1]!)).toMatchObject({ units: 9, spent: 18, settled: 'usage' });
    expect(settled).toEqual([[9, undefined]]);
  });

  it('a stream that ends without [DONE] and without usage: settled at the reservation, the receipt at its end', async () => {
    const { session, settled } = recordingSession();
    const answer = await meterSessionByUsage(
      session,
      completion({ stream: true }),
      async () => new Response(sse(['data: {"choices":[]}\n\n', 'data: tail-without-blank-line']), { headers: { 'content-type': 'text/event-stream' } }),
      { meter: openAiUsage({ defaultReserveTokens: 100, tokensPerUnit: 10 }) },
    );
    const text = await answer.text();
    expect(text).toContain('data: tail-without-blank-line');
    expect(settled).toEqual([[undefined, 'no-usage']]);
    expect(text).toMatch(/"units":10,"spent":20,"settled":"at reservation","settledBecause":"no-usage"/);
  });
});

describe('openAiUsage', () => {
  const meter = openAiUsage();
  it('estimates max_completion_tokens, else max_tokens, else the default; bills total_tokens (or completion_tokens)', () => {
    const request = completion({});
    expect(meter.estimate(request, { max_completion_tokens: 7, max_tokens: 9 })).toBe(7);
    expect(meter.estimate(request, { max_tokens: 9 })).toBe(9);
    expect(meter.estimate(request, { max_tokens: -1 })).toBe(4096);
    expect(meter.estimate(request, 'not json')).toBe(4096);
    expect(openAiUsage({ tokensPerUnit: 1000 }).estimate(request, { max_tokens: 1001 })).toBe(2);
    const usage = { usage: { total_tokens: 37, completion_tokens: 25 } };
    expect(meter.usageOfJson(usage)).toBe(37);
    expect(openAiUsage({ count: 'completion' }).usageOfJson(usage)).toBe(25);
    expect(meter.usageOfJson({ usage: { total_tokens: -3 } })).toBeUndefined();
    expect(meter.usageOfJson({ choices: [] })).toBeUndefined();
    expect(meter.usageOfEvent('[DONE]')).toBeUndefined();
  });

  it('asks a streamed completion for its usage only when the client did not', () => {
    const request = completion({ stream: true });
    expect(meter.prepare!(request, { stream: true })).toBeInstanceOf(Request);
    expect(meter.prepare!(request, { stream: true, stream_options: { include_usage: true } })).toBeUndefined();
    expect(meter.prepare!(request, { stream: false })).toBeUndefined();
    expect(() => openAiUsage({ tokensPerUnit: 0 })).toThrow(TypeError);
  });
});
