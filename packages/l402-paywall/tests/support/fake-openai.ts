// A stand-in for an OpenAI-compatible completions server (vLLM, llama.cpp,
// Ollama's /v1), as a fetch handler (for the command line, served over HTTP
// with listen.ts):
// POST /v1/chat/completions answers JSON with `usage`, or (stream: true) SSE
// chunks then, when asked with stream_options.include_usage as OpenAI does, a
// usage-only chunk (`choices: []`), then `data: [DONE]`. Its `mode` makes the
// ways an upstream goes wrong: never reporting usage, dying mid-stream,
// answering an error, or holding the stream open (a client that hangs up).

export type FakeOpenAiMode = 'usage' | 'no-usage' | 'dies' | 'error' | 'holds';

export interface FakeOpenAi {
  fetch(request: Request): Promise<Response>;
  /** What each completion request asked (its JSON body) and its headers. */
  received: { body: Record<string, unknown>; headers: Headers }[];
  mode: FakeOpenAiMode;
  /** The total_tokens reported (completion tokens: all but `promptTokens`). */
  totalTokens: number;
  promptTokens: number;
  /** Content chunks streamed before the usage (or before dying). */
  chunks: number;
  /** Resolves once a `holds` stream was cancelled by its reader. */
  cancelled: Promise<void>;
}

const encoder = new TextEncoder();
const chunk = (id: string, delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', model: 'fake', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

export function fakeOpenAi(options: Partial<Pick<FakeOpenAi, 'mode' | 'totalTokens' | 'promptTokens' | 'chunks'>> = {}): FakeOpenAi {
  let cancelledNow!: () => void;
  const upstream: FakeOpenAi = {
    received: [],
    mode: options.mode ?? 'usage',
    totalTokens: options.totalTokens ?? 37,
    promptTokens: options.promptTokens ?? 12,
    chunks: options.chunks ?? 5,
    cancelled: new Promise<void>((resolve) => {
      cancelledNow = resolve;
    }),
    async fetch(request) {
      if (new URL(request.url).pathname !== '/v1/chat/completions' || request.method !== 'POST')
        return Response.json({ error: { message: 'not found' } }, { status: 404 });
      const body = (await request.json()) as Record<string, unknown>;
      upstream.received.push({ body, headers: request.headers });
      const usage = {
        prompt_tokens: upstream.promptTokens,
        completion_tokens: upstream.totalTokens - upstream.promptTokens,
        total_tokens: upstream.totalTokens,
      };
      if (upstream.mode === 'error') return Response.json({ error: { message: 'model overloaded', type: 'server_error' } }, { status: 503 });
      if (body.stream !== true) {
        const answer = { id: 'cmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hello' } }] };
        return Response.json(upstream.mode === 'no-usage' ? answer : { ...answer, usage });
      }
      const wantsUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
      const { mode, chunks } = upstream;
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        async pull(controller) {
          await new Promise((resolve) => setTimeout(resolve, 1));
          if (sent < chunks) {
            controller.enqueue(encoder.encode(chunk('cmpl-1', { content: `word${++sent} ` })));
            return;
          }
          if (mode === 'dies') {
            controller.error(new Error('upstream connection reset'));
            return;
          }
          if (mode === 'holds') return new Promise<void>(() => {}); // never more: the reader hangs up
          if (sent === chunks) {
            sent++;
            controller.enqueue(encoder.encode(chunk('cmpl-1', {}, 'stop')));
            if (wantsUsage && mode === 'usage') controller.enqueue(encoder.encode(`data: ${JSON.stringify({ id: 'cmpl-1', choices: [], usage })}\n\n`));
            return;
          }
          controller.enqueue(encoder.encode('data: [DONE]\n\n'));
          controller.close();
        },
        cancel() {
          cancelledNow();
        },
      });
      return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
    },
  };
  return upstream;
}
