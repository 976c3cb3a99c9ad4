// Building CloudEvents 1.0 and W3C trace contexts with Web Crypto only.
import type { Causation, L402Event, L402EventData, L402EventType } from './types.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ALL_ZEROS = /^0+$/;
const HEX_DIGITS = [48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102]; // 0-9a-f
// Random bytes are drawn 4 KiB at a time: each getRandomValues call costs a
// couple of microseconds in Node whatever its size, which per event would be
// most of an event's cost.
const POOL_BYTES = 4096;

type RandomHex = (bytes: number) => string;

interface EventFields<Data extends L402EventData> {
  type: L402EventType;
  source: string;
  subject: string;
  data: Data;
  id?: string;
  time?: number;
}

/**
 * Where one event producer (a server's events, a client's session) draws its
 * span ids and formats its event times: a pool of random bytes refilled 4 KiB
 * at a time and the current second's ISO prefix, both its own, so no two
 * producers share either. The free functions below do the same without them.
 */
export interface EventMint {
  traceFrom(incoming: string | null | undefined): Pick<Causation, 'traceparent' | 'traceStarted'>;
  newTraceparent(): string;
  childSpan(traceparent: string): string;
  isoTime(now?: number): string;
  makeEvent<Data extends L402EventData>(fields: EventFields<Data>): L402Event<Data>;
}

export function eventMint(): EventMint {
  const pool = new Uint8Array(POOL_BYTES);
  let poolAt = pool.length;
  // Reused for every id: one string from char codes, no chain of partial strings for the collector.
  const hexCodes: number[] = [];
  const randomHex: RandomHex = (bytes) => {
    if (poolAt + bytes > pool.length) {
      crypto.getRandomValues(pool);
      poolAt = 0;
    }
    const hex = hexOf(pool, poolAt, bytes, hexCodes);
    poolAt += bytes;
    return hex;
  };
  // toISOString costs half a microsecond; events of one second share its first 20 characters.
  let isoSecond = -1;
  let isoPrefix = '';
  const isoTime = (now: number = Date.now()): string => {
    const second = Math.floor(now / 1000);
    if (second !== isoSecond) {
      isoSecond = second;
      isoPrefix = new Date(second * 1000).toISOString().slice(0, 20);
    }
    const ms = now - second * 1000;
    return `${isoPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
  };
  return {
    traceFrom: (incoming) => traceWith(randomHex, incoming),
    newTraceparent: () => traceparentWith(randomHex),
    childSpan: (traceparent) => childSpanWith(randomHex, traceparent),
    isoTime,
    makeEvent: (fields) => eventWith(isoTime(fields.time), fields),
  };
}

/** `bytes` bytes of `source` from `at`, as lower-case hex, written through `codes` (a scratch array). */
function hexOf(source: Uint8Array, at: number, bytes: number, codes: number[]): string {
  codes.length = bytes * 2;
  for (let i = 0; i < bytes; i++) {
    const b = source[at + i]!;
    codes[2 * i] = HEX_DIGITS[b >> 4]!;
    codes[2 * i + 1] = HEX_DIGITS[b & 15]!;
  }
  return String.fromCharCode.apply(null, codes);
}

/** Random hex drawn for this call alone: the free functions' source (a mint's is its pool). */
const freshHex: RandomHex = (bytes) => hexOf(crypto.getRandomValues(new Uint8Array(bytes)), 0, bytes, []);

function traceWith(randomHex: RandomHex, incoming: string | null | undefined): Pick<Causation, 'traceparent' | 'traceStarted'> {
  const valid = validTraceparent(incoming);
  if (valid) return { traceparent: childSpanWith(randomHex, valid), traceStarted: false };
  return { traceparent: traceparentWith(randomHex), traceStarted: true };
}

function traceparentWith(randomHex: RandomHex): string {
  return `00-${randomHex(16)}-${randomHex(8)}-01`;
}

function childSpanWith(randomHex: RandomHex, traceparent: string): string {
  return `${traceparent.slice(0, 36)}${randomHex(8)}${traceparent.slice(52)}`;
}

/**
 * The event's place in the caller's trace: a new span under the request's
 * `traceparent` when it is a valid version-00 one, otherwise a new trace.
 */
export function traceFrom(incoming: string | null | undefined): Pick<Causation, 'traceparent' | 'traceStarted'> {
  return traceWith(freshHex, incoming);
}

/** `incoming` in lower case when it is a valid version-00 W3C traceparent (ids not all zeros); otherwise undefined. */
export function validTraceparent(incoming: string | null | undefined): string | undefined {
  const normalised = incoming?.trim().toLowerCase();
  const match = normalised ? TRACEPARENT.exec(normalised) : null;
  return match && !ALL_ZEROS.test(match[1]!) && !ALL_ZEROS.test(match[2]!) ? normalised : undefined;
}

/** A fresh, sampled W3C traceparent. */
export function newTraceparent(): string {
  return traceparentWith(freshHex);
}

/** A child span of `traceparent` (same trace, new span id). */
export function childSpan(traceparent: string): string {
  return childSpanWith(freshHex, traceparent);
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

/** new Date(now).toISOString(); a mint's isoTime gives the same from the second's prefix it keeps. */
export function isoTime(now: number = Date.now()): string {
  return new Date(now).toISOString();
}

/** An event timed by isoTime; an event producer builds its events with its mint's makeEvent. */
export function makeEvent<Data extends L402EventData>(fields: EventFields<Data>): L402Event<Data> {
  return eventWith(isoTime(fields.time), fields);
}

// Written out field by field, without spreads: an event is built per paid request.
function eventWith<Data extends L402EventData>(time: string, fields: EventFields<Data>): L402Event<Data> {
  return {
    specversion: '1.0',
    id: fields.id ?? crypto.randomUUID(),
    source: fields.source,
    type: fields.type,
    time,
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
