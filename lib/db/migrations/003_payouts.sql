-- Managed mode: who is owed what, and the payouts that settle it
-- (docs/architecture.md decisions 6-8, lib/service/money/payouts.ts). Integer millisatoshis.

-- Every invoice POST /api/invoice issued with an owner: the webhook learns whom
-- a payment is for from here, and the payouts cron looks up the ones whose
-- webhook never came (settled_at still NULL).
CREATE TABLE managed_invoices (
  payment_hash  text PRIMARY KEY,
  owner_address text NOT NULL,
  amount_msat   bigint NOT NULL CHECK (amount_msat > 0),
  endpoint      text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  settled_at    timestamptz,
  -- when the cron last asked the provider about it (the least recently checked go first)
  checked_at    timestamptz
);
-- In the order the cron checks them (lib/service/money/managed.ts reconcileManagedInvoices).
CREATE INDEX managed_invoices_unsettled ON managed_invoices ((coalesce(checked_at, created_at))) WHERE settled_at IS NULL;

-- One payment to one owner, covering one or more splits (splits.payout_id).
--   pending: to be attempted at next_attempt_at (or being attempted while claimed_until is ahead)
--   paid:    the owner's invoice was paid (routing_fee_msat is what it cost the service)
--   failed:  definitely not paid after PAYOUT_MAX_ATTEMPTS; its splits stay owed (state failed) for an operator
-- invoice_hash is the payment hash of the owner's invoice being paid, stored
-- BEFORE paying (with the invoice itself, which is public), so an attempt whose
-- outcome is unknown is looked up at the provider, and paid again only with
-- that same invoice while it can still be paid. Never the preimage.
CREATE TABLE payouts (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  owner_address    text NOT NULL,
  amount_msat      bigint NOT NULL CHECK (amount_msat > 0),
  max_fee_msat     bigint NOT NULL CHECK (max_fee_msat >= 0),
  state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'paid', 'failed')),
  invoice_hash     text,
  invoice          text,
  routing_fee_msat bigint,
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  claimed_until    timestamptz,
  claim_token      text,
  reason           text,
  last_error       text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  paid_at          timestamptz
);
CREATE INDEX payouts_due ON payouts (next_attempt_at) WHERE state = 'pending';
CREATE INDEX payouts_owner ON payouts (owner_address, created_at DESC);

-- Every attempt and what became of it: the ledger says why, attempt by attempt.
CREATE TABLE payout_attempts (
  payout_id    uuid NOT NULL REFERENCES payouts (id),
  attempt      integer NOT NULL,
  invoice_hash text,
  outcome      text NOT NULL CHECK (outcome IN ('paid', 'failed', 'unknown', 'refused', 'waiting')),
  reason       text,
  detail       text,
  at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (payout_id, attempt)
);

-- A split is claimed by exactly one payout (set together with state pending).
-- source: webhook (the provider's delivery), reconcile (the cron found it
-- settled), manual (POST /api/split).
ALTER TABLE splits ADD COLUMN payout_id uuid REFERENCES payouts (id);
ALTER TABLE splits ADD COLUMN source text NOT NULL DEFAULT 'webhook' CHECK (source IN ('webhook', 'reconcile', 'manual'));
CREATE INDEX splits_payout ON splits (payout_id);
