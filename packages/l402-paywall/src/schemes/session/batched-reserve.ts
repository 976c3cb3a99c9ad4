// The reservation a metered stream (meter.ts) pays its chunks ahead with:
// SessionUse.reserve, but its settling joins the request's spending, told to
// onSession in batches as spend's are, rather than reported at once as
// metered work. Internal to the session scheme: keyed by a symbol, so the
// public SessionUse type keeps `reserve(units)` only.
import type { ReserveAnswer, SessionUse } from '../../core/metering.js';

export const RESERVE_BATCHED = Symbol('l402-paywall reserve batched');

/** A SessionUse as a session-paid request makes it: with the batched reservation where the ledger keeps reservations. */
export type BatchingSessionUse = SessionUse & { [RESERVE_BATCHED]?(units: number): Promise<ReserveAnswer> };
