// The one bounded reader (requests in lib/http/input.ts, backends' answers in
// providers/http.ts, the managed service's answers): size cap, UTF-8, early end, deadline.
import { describe, expect, it } from 'vitest';
import { readBoundedText } from 'l402-paywall/lightning';

const bytes = (text: string) => new TextEncoder().encode(text);

/** A stream of these chunks; `endless` keeps it open afterwards. Records whether the reader hung up. */
function stream(chunks: Uint8Array[], { endless = false } = {}) {
  const state = { cancelled: false, pulled: 0 };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const chunk = chunks[state.pulled++];
      if (chunk) controller.enqueue(chunk);
      else if (!endless) controller.close();
      else return new Promise(() => {}); // never another byte
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { body, state };
}

describe('readBoundedText', () => {
  it('reads a body whole, a character split across chunks included; no body is empty text', async () => {
    const euro = bytes('€'); // three bytes
    const { body } = stream([bytes('price: 5 '), euro.slice(0, 1), euro.slice(1), bytes(' each')]);
    expect(await readBoundedText(body, 100)).toEqual({ ok: true, text: 'price: 5 € each' });
    expect(await readBoundedText(null, 100)).toEqual({ ok: true, text: '' });
  });

  it('answers too-large past the limit and hangs up on the rest', async () => {
    const exact = stream([bytes('12345'), bytes('67890')]);
    expect(await readBoundedText(exact.body, 10)).toEqual({ ok: true, text: '1234567890' });
    const over = stream([bytes('12345'), bytes('678901')], { endless: true });
    expect(await readBoundedText(over.body, 10)).toEqual({ ok: false, reason: 'too-large' });
    // A body whose text happens to be a refusal's name is just text.
    expect(await readBoundedText(stream([bytes('too-large')]).body, 100)).toEqual({ ok: true, text: 'too-large' });
    expect(over.state.cancelled).toBe(true);
  });

  it('with cut, gives the text of the first limit bytes past the limit, a character split there left out, and hangs up', async () => {
    const over = stream([bytes('12345'), bytes('67890abc')], { endless: true });
    expect(await readBoundedText(over.body, 10, { cut: true })).toEqual({ ok: true, text: '1234567890', cut: true });
    expect(over.state.cancelled).toBe(true);
    // '€' is three bytes: a limit of 6 ends inside the second one.
    expect(await readBoundedText(stream([bytes('a€€b')]).body, 6, { cut: true })).toEqual({ ok: true, text: 'a€', cut: true });
    // Within the limit nothing is cut.
    expect(await readBoundedText(stream([bytes('1234567890')]).body, 10, { cut: true })).toEqual({ ok: true, text: '1234567890' });
  });

  it('answers not-utf8 for bytes that are not UTF-8, unless lenient', async () => {
    const broken = () => stream([bytes('ok '), new Uint8Array([0xff, 0xfe]), bytes(' end')]).body;
    expect(await readBoundedText(broken(), 100)).toEqual({ ok: false, reason: 'not-utf8' });
    expect(await readBoundedText(broken(), 100, { lenient: true })).toEqual({ ok: true, text: 'ok \uFFFD\uFFFD end' });
    // A multi-byte character cut off by the end of the stream is not UTF-8 either.
    expect(await readBoundedText(stream([bytes('€').slice(0, 2)]).body, 100)).toEqual({ ok: false, reason: 'not-utf8' });
  });

  it('stops as soon as the text is enough, on a stream that never ends', async () => {
    const { body, state } = stream([bytes('{"a":'), bytes('1}\n{"b"'), bytes(':2}\n')], { endless: true });
    const text = await readBoundedText(body, 1000, { enough: (soFar) => soFar.includes('\n') });
    expect(text).toEqual({ ok: true, text: '{"a":1}\n{"b"' });
    expect(state.cancelled).toBe(true);
  });

  it('throws the signal reason when it aborts before the body is whole, and hangs up', async () => {
    const { body, state } = stream([bytes('half a bo')], { endless: true });
    const reason = new Error('deadline');
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 20);
    await expect(readBoundedText(body, 1000, { signal: controller.signal })).rejects.toBe(reason);
    expect(state.cancelled).toBe(true);
    await expect(readBoundedText(stream([]).body, 10, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });
});
