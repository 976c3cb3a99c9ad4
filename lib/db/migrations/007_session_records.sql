-- Prepaid sessions in the payment log (lib/service/records/session-records.ts, docs/sessions.md).
-- A session's deposit and each top-up are rows of payments, like any payment,
-- with session_id naming the session (the deposit's own payment hash); the
-- requests a session serves are not payments: what they spent, the close and
-- the refund are one row per session here, keyed by the deposit's payment hash.
ALTER TABLE payments ADD COLUMN session_id text;
CREATE INDEX payments_session_id ON payments (session_id) WHERE session_id IS NOT NULL;

-- Written by merges that commute (larger totals, the refund's furthest state),
-- so entries applied late, out of order or twice leave the same row.
CREATE TABLE payment_sessions (
  session_id      text PRIMARY KEY,
  endpoint        text,
  unit_price_msat bigint CHECK (unit_price_msat > 0),
  -- Deposit and top-ups credited, and what was spent, as the ledger last said.
  paid_msat       bigint NOT NULL DEFAULT 0 CHECK (paid_msat >= 0),
  spent_msat      bigint NOT NULL DEFAULT 0 CHECK (spent_msat >= 0),
  opened_at       timestamptz,
  closed_at       timestamptz,
  closed_because  text CHECK (closed_because IN ('client', 'idle')),
  -- What goes back to the client: set at the close, grown by top-ups paid after it.
  refund_msat     bigint NOT NULL DEFAULT 0 CHECK (refund_msat >= 0),
  -- none (nothing left), due, failed (retried at refund_retry_at), paid, given-up (refund_reason): the operator's to settle.
  refund_state    text CHECK (refund_state IN ('none', 'due', 'failed', 'paid', 'given-up')),
  refund_attempts integer NOT NULL DEFAULT 0,
  refund_error    text,
  refund_reason   text,
  refund_retry_at timestamptz,
  -- When the refund was paid or given up.
  refund_settled_at timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_sessions_refund_state ON payment_sessions (refund_state) WHERE refund_state IN ('due', 'failed', 'given-up');
