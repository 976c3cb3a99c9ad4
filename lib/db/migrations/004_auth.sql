-- LNURL-auth dashboard sessions, address links and erasures (docs/architecture.md decision 11).

-- Only the SHA-256 of a session token is kept: a copy of this table opens no session.
CREATE TABLE auth_sessions (
  token_hash  text PRIMARY KEY,
  pubkey      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz
);
CREATE INDEX auth_sessions_pubkey ON auth_sessions (pubkey);

-- A key sees the payments of the Lightning Addresses it proved control of
-- (paid 1 sat with a code in the LUD-12 comment, then typed the code back).
CREATE TABLE address_links (
  pubkey    text NOT NULL,
  address   text NOT NULL,
  linked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (pubkey, address)
);
CREATE INDEX address_links_address ON address_links (address);

-- Right to erasure: that an erasure happened and how much it removed, never whose.
CREATE TABLE erasures (
  id        uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  erased_at timestamptz NOT NULL DEFAULT now(),
  payments  integer NOT NULL CHECK (payments >= 0),
  links     integer NOT NULL CHECK (links >= 0),
  sessions  integer NOT NULL CHECK (sessions >= 0)
);
