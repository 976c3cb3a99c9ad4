// Building CloudEvents 1.0 and W3C trace contexts with Web Crypto only.
import type { Causation, L402Event, L402EventData, L402EventType } from './types.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ALL_ZEROS = /^0+$/;

function randomHex(bytes: number): string {
  const buffer = crypto.getRandomValues(new Uint8Array(bytes));
  let hex = '';
  for (const b of buffer) hex += (b < 16 ? '0' : '') + b.toString(16);
  return hex;
}

/**
 * The event's place in the caller's trace: a new span under the request's
 * `traceparent` when it is a valid version-00 one, otherwise a new trace.
 */
export function traceFrom(incoming: string | null | undefined): Pick<Causation, 'traceparent' | 'traceStarted'> {
  const match = incoming ? TRACEPARENT.exec(incoming.trim().toLowerCase()) : null;
  if (match && !ALL_ZEROS.test(match[1]!) && !ALL_ZEROS.test(match[2]!)) {
    return { traceparent: `00-${match[1]}-${randomHex(8)}-${match[3]}`, traceStarted: false };
  }
  return { traceparent: newTraceparent(), traceStarted: true };
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

export function makeEvent<Data extends L402EventData>(fields: { type: L402EventType; source: string; subject: string; data: Data; id?: string; dataschema?: string }): L402Event<Data> {
  return {
    specversion: '1.0',
    id: fields.id ?? crypto.randomUUID(),
    source: fields.source,
    type: fields.type,
    time: new Date().toISOString(),
    subject: fields.subject,
    datacontenttype: 'application/json',
    ...(fields.dataschema ? { dataschema: fields.dataschema } : {}),
    traceparent: fields.data.causation.traceparent,
    data: fields.data,
  };
}

/** Milliseconds to 0.1 ms: finer than that is noise, and shorter JSON. */
export function elapsedMs(since: number): number {
  return Math.round((performance.now() - since) * 10) / 10;
}
