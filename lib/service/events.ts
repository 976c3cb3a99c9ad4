// The service's own audit events (docs/events.md): when the operator
// sets EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET, the paid routes (the demo
// through withL402's onEvent, Pro through serverEvents) post signed CloudEvents
// there. Delivery follows the outbound policy (https, public hosts; loopback
// only in development) and is kept alive after the answer with Vercel's
// waitUntil. Unset, nothing here exists and no event is built.
import { waitUntil as vercelWaitUntil } from '@vercel/functions';
import { httpEventSink, serverEvents, sessionEvents, type EventHandler, type EventSinkStats, type ServerEvents } from 'l402-paywall/events';
import type { SessionObserver } from 'l402-paywall/lightning';
import type { Config } from '../config.js';
import { guardedFetch } from '../http/outbound.js';
import { outboundPolicy } from '../lightning/lnurl.js';

/** data.agent.id of the service's events. */
export const SERVICE_AGENT_ID = 'l402-paywall-service';

export interface ServiceEvents {
  /** withL402 options: the sink as onEvent (the paywall's own events and its prepaid sessions'), and who emits. */
  paywall: { onEvent: EventHandler; events: { agentId: string; source: string | undefined; waitUntil: (promise: Promise<unknown>) => void } };
  /** For paid flows that are not withL402 (Pro activation). */
  server: ServerEvents;
  /** The prepaid sessions' events outside a paywall (the cron's refunds): an onSession observer (lib/service/session-observer.ts). */
  sessions: SessionObserver;
  /** Waits for every event sent so far to be delivered or given up (tests, shutdown). */
  flush(): Promise<void>;
  /** For GET /api/health: where (host only: a path or query can hold a token) and how delivery goes in this instance. */
  describe(): { configured: true; host: string } & EventSinkStats;
}

/**
 * `publicUrl`, the service's own origin from configuration, is the events' CloudEvents `source`
 * (unset: the library's urn:l402-paywall:server:<agent id>), never a request's Host.
 */
export function createServiceEvents(config: Config, publicUrl: string | undefined): ServiceEvents | undefined {
  if (!config.events) return undefined;
  const report = (error: unknown, context: string) => console.error(`[events] ${context}: ${error instanceof Error ? error.message : String(error)}`);
  const sink = httpEventSink({
    url: config.events.webhookUrl,
    secret: config.events.webhookSecret,
    fetch: guardedFetch(outboundPolicy(config)),
    waitUntil: vercelWaitUntil,
    onError: report,
  });
  const host = new URL(config.events.webhookUrl).host;
  return {
    paywall: { onEvent: sink, events: { agentId: SERVICE_AGENT_ID, source: publicUrl, waitUntil: vercelWaitUntil } },
    server: serverEvents(sink, { agentId: SERVICE_AGENT_ID, source: publicUrl, onError: report }),
    sessions: sessionEvents(sink, { agentId: SERVICE_AGENT_ID, source: publicUrl, onError: report }),
    flush: () => sink.flush(),
    describe: () => ({ configured: true, host, ...sink.stats() }),
  };
}
