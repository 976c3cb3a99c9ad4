-- Payments (docs/architecture.md "The hosted interface's records") plus the owner they were paid to.
-- payment_hash is public by design; the preimage is never stored.
CREATE TABLE payments (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  payment_hash  text NOT NULL UNIQUE,
  endpoint      text,
  amount_sats   integer,
  paid_at       timestamptz NOT NULL DEFAULT now(),
  owner_address text
);
-- The stats queries: everything by time, one owner's payments by time.
CREATE INDEX payments_paid_at ON payments (paid_at DESC);
CREATE INDEX payments_owner_paid_at ON payments (owner_address, paid_at DESC);

-- The public directory of paid APIs (docs/architecture.md "The hosted interface's records").
CREATE TABLE apis (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  url               text NOT NULL UNIQUE,
  name              text NOT NULL,
  description       text,
  price_sats        integer NOT NULL CHECK (price_sats >= 1),
  category          text CHECK (category IN ('data', 'ai', 'finance', 'weather', 'compute', 'storage', 'other')),
  lightning_address text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX apis_created_at ON apis (created_at DESC, id);
CREATE INDEX apis_category_created_at ON apis (category, created_at DESC, id);

-- Pro subscriptions, one row per Lightning Address.
CREATE TABLE pro_subscriptions (
  address    text PRIMARY KEY,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Each paid Pro invoice activates once, whatever the key-value store remembers.
CREATE TABLE pro_activations (
  payment_hash text PRIMARY KEY,
  address      text NOT NULL REFERENCES pro_subscriptions (address) DEFERRABLE INITIALLY DEFERRED,
  activated_at timestamptz NOT NULL DEFAULT now()
);
