-- The split ledger (docs/architecture.md decision 6): one row per incoming managed-mode
-- payment, so each payment is split exactly once whatever the number of
-- webhook deliveries. Integer millisatoshis throughout.
--   accrued: the owner's share is below the payout minimum; it waits to be batched
--   pending: a payout covering this share is being made (or will be retried)
--   paid:    the owner has been paid this share
--   failed:  the payout failed for good (the reason is kept); an operator decides
CREATE TABLE splits (
  payment_hash  text PRIMARY KEY,
  owner_address text NOT NULL,
  amount_msat   bigint NOT NULL CHECK (amount_msat > 0),
  owner_msat    bigint NOT NULL CHECK (owner_msat >= 0),
  fee_msat      bigint NOT NULL CHECK (fee_msat >= 0),
  state         text NOT NULL CHECK (state IN ('accrued', 'pending', 'paid', 'failed')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  CHECK (owner_msat + fee_msat = amount_msat)
);
CREATE INDEX splits_owner_state ON splits (owner_address, state);
