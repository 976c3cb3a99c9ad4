// Building CloudEvents 1.0 and W3C trace contexts with Web Crypto only.
import type { Causation, L402Event, L402EventData, L402EventType } from './types.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ALL_ZEROS = /^0+$/;

// Random bytes are drawn 4 KiB at a time: each getRandomValues call costs a
// couple of microseconds in Node whatever its size, which per event would be
// most of an event's cost.
const pool = new Uint8Array(4096);
let poolAt = pool.length;
const HEX_DIGITS = [48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102]; // 0-9a-f
const hexCodes: number[] = [];

function randomHex(bytes: number): string {
  if (poolAt + bytes > pool.length) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  hexCodes.length = bytes * 2;
  for (let i = 0; i < bytes; i++) {
    const b = pool[poolAt++]!;
    hexCodes[2 * i] = HEX_DIGITS[b >> 4]!;
    hexCodes[2 * i + 1] = HEX_DIGITS[b & 15]!;
  }
  // One string from char codes: no chain of partial strings for the collector.
  return String.fromCharCode.apply(null, hexCodes);
}

/**
 * The event's place in the caller's trace: a new span under the request's
 * `traceparent` when it is a valid version-00 one, otherwise a new trace.
 */
export function traceFrom(incoming: string | null | undefined): Pick<Causation, 'traceparent' | 'traceStarted'> {
  const valid = validTraceparent(incoming);
  if (valid) return { traceparent: childSpan(valid), traceStarted: false };
  return { traceparent: newTraceparent(), traceStarted: true };
}

/** `incoming` in lower case when it is a valid version-00 W3C traceparent (ids not all zeros); otherwise undefined. */
export function validTraceparent(incoming: string | null | undefined): string | undefined {
  const normalised = incoming?.trim().toLowerCase();
  const match = normalised ? TRACEPARENT.exec(normalised) : null;
  return match && !ALL_ZEROS.test(match[1]!) && !ALL_ZEROS.test(match[2]!) ? normalised : undefined;
}

/** A fresh, sampled W3C traceparent. */
export function newTraceparent(): string {
  return `00-${randomHex(16)}-${randomHex(8)}-01`;
}

/** A child span of `traceparent` (same trace, new span id). */
export function childSpan(traceparent: string): string {
  return `${traceparent.slice(0, 36)}${randomHex(8)}${traceparent.slice(52)}`;
}

// Identifiers a client declares are kept only when they are short printable tokens.
const DECLARED_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

export function declaredId(value: string | null | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed && DECLARED_ID.test(trimmed) ? trimmed : undefined;
}

/** A server's CloudEvents `source`: its configured URL, else a URN of its configured id; never a request's Host. */
export function serverSource(options: { agentId?: string; source?: string }): string {
  return options.source ?? `urn:l402-paywall:server:${declaredId(options.agentId) ?? 'anonymous'}`;
}

// toISOString costs half a microsecond; events of one second share its first 20 characters.
let isoSecond = -1;
let isoPrefix = '';

/** new Date(now).toISOString(), from a prefix kept per second. */
export function isoTime(now: number = Date.now()): string {
  const second = Math.floor(now / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 20);
  }
  const ms = now - second * 1000;
  return `${isoPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
}

// Written out field by field, without spreads: an event is built per paid request.
export function makeEvent<Data extends L402EventData>(fields: {
  type: L402EventType;
  source: string;
  subject: string;
  data: Data;
  id?: string;
  time?: number;
}): L402Event<Data> {
  return {
    specversion: '1.0',
    id: fields.id ?? crypto.randomUUID(),
    source: fields.source,
    type: fields.type,
    time: isoTime(fields.time),
    subject: fields.subject,
    datacontenttype: 'application/json',
    traceparent: fields.data.causation.traceparent,
    data: fields.data,
  };
}

/** Milliseconds (performance.now() readings) to 0.1 ms: finer than that is noise, and shorter JSON. */
export function elapsedMs(since: number, until: number = performance.now()): number {
  return Math.round((until - since) * 10) / 10;
}
