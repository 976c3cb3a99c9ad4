-- Top-ups a prepaid session refused (lib/service/records/session-records.ts, docs/sessions.md):
-- paid after the session's refund had started (being paid, paid or given up),
-- so not taken. The payment is still the client's: its replay claim was given
-- back, so it can open a session (then it is also a row of payments). One row
-- per top-up, keyed by its payment hash: told twice, through the outbox or
-- late, it is written once.
CREATE TABLE session_refused_topups (
  payment_hash  text PRIMARY KEY,
  session_id    text NOT NULL,
  endpoint      text,
  amount_msat   bigint NOT NULL CHECK (amount_msat > 0),
  -- Where the session's refund stood when the top-up came.
  refund_state  text NOT NULL CHECK (refund_state IN ('paying', 'paid', 'given-up')),
  refused_at    timestamptz NOT NULL
);
CREATE INDEX session_refused_topups_session_id ON session_refused_topups (session_id);
