// meterByUsage as a handler calls it (l402-paywall/sessions): the work runs
// under a reservation on the session the request was paid by
// (getPaidRequest), the metering itself in schemes/session/usage-meter.ts.
import { meterSessionByUsage, type MeterByUsageOptions } from '../schemes/session/usage-meter.js';
import { getPaidRequest } from './serve.js';

/**
 * Runs `forward` under a reservation on the request's session (withL402 with
 * `session`, or the proxy): reserves the meter's estimate (a 402 asking for a
 * top-up, before anything is forwarded, when the balance cannot cover it),
 * forwards, passes the answer through, and settles the session to the usage
 * the answer reports, giving the rest back; at the reservation, said in the
 * receipt and the events, when it reports none, the upstream breaks off, or
 * the client hangs up (docs/sessions.md, "Metering by reported usage").
 */
export function meterByUsage(request: Request, forward: (request: Request) => Promise<Response>, options: MeterByUsageOptions): Promise<Response> {
  return meterSessionByUsage(options?.session ?? getPaidRequest(request)?.session, request, forward, options);
}
