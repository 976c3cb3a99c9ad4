-- Stats roll-up (GET /api/stats, lib/service/records/stats-queries.ts): payments counted per
-- UTC day and owner, so admin stats over millions of rows read thousands of
-- cells instead. It is EXACT, not an estimate: statement-level triggers on
-- payments and splits keep it equal to a recomputation from the base tables
-- after every insert, delete, update or truncate, whatever paid_at the rows
-- carry (back-dated rows land in their own day). stats_owed (further down)
-- does the same for what each owner is still owed.
--
-- fee_msat is the service fee (splits.fee_msat) of the payments in the cell.
-- A payment and its split are written by different transactions (the payment
-- log and the webhook), in either order. The one that comes second adds the
-- fee; so that "second" is well defined under READ COMMITTED, each trigger
-- first takes a transaction-scoped advisory lock on the payment hash's bucket:
-- shared for payments (payment writers never wait for each other), exclusive
-- for splits. Whichever trigger runs later then sees the other's row committed.
CREATE TABLE stats_daily (
  day           date NOT NULL,
  owner_address text,            -- NULL: payments that have no owner (sovereign mode, the demo)
  payments      bigint NOT NULL,
  sats          bigint NOT NULL,
  fee_msat      bigint NOT NULL
);
-- Cells may fall back to zero payments after deletes; readers skip those.
CREATE UNIQUE INDEX stats_daily_cell ON stats_daily (day, owner_address) NULLS NOT DISTINCT;
CREATE INDEX stats_daily_owner_day ON stats_daily (owner_address, day);

-- 256 buckets: few enough locks for a bulk statement, rare collisions between single rows.
CREATE FUNCTION stats_hash_bucket(hash text) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT hashtext(hash) & 255 $$;

-- Every trigger adds signed deltas to cells with this statement's shape:
--   INSERT ... SELECT day, owner, payments, sats, fee_msat ... GROUP BY day, owner ORDER BY day, owner
--   ON CONFLICT ... DO UPDATE SET <cell> = <cell> + <delta>
-- Key order: concurrent statements lock cells in the same order and cannot deadlock on them.

-- payments -------------------------------------------------------------------

CREATE FUNCTION stats_payments_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(5402, b) FROM (SELECT DISTINCT stats_hash_bucket(payment_hash) AS b FROM new_rows ORDER BY 1) AS buckets;
  INSERT INTO stats_daily AS d (day, owner_address, payments, sats, fee_msat)
  SELECT (n.paid_at AT TIME ZONE 'UTC')::date, n.owner_address, count(*), coalesce(sum(n.amount_sats), 0), coalesce(sum(s.fee_msat), 0)
  FROM new_rows n LEFT JOIN splits s ON s.payment_hash = n.payment_hash
  GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (day, owner_address) DO UPDATE
    SET payments = d.payments + excluded.payments, sats = d.sats + excluded.sats, fee_msat = d.fee_msat + excluded.fee_msat;
  RETURN NULL;
END $$;

CREATE FUNCTION stats_payments_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(5402, b) FROM (SELECT DISTINCT stats_hash_bucket(payment_hash) AS b FROM old_rows ORDER BY 1) AS buckets;
  INSERT INTO stats_daily AS d (day, owner_address, payments, sats, fee_msat)
  SELECT (o.paid_at AT TIME ZONE 'UTC')::date, o.owner_address, -count(*), -coalesce(sum(o.amount_sats), 0), -coalesce(sum(s.fee_msat), 0)
  FROM old_rows o LEFT JOIN splits s ON s.payment_hash = o.payment_hash
  GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (day, owner_address) DO UPDATE
    SET payments = d.payments + excluded.payments, sats = d.sats + excluded.sats, fee_msat = d.fee_msat + excluded.fee_msat;
  RETURN NULL;
END $$;

CREATE FUNCTION stats_payments_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Updates that change nothing counted here cost no lock and no write.
  IF NOT EXISTS (SELECT payment_hash, paid_at, owner_address, amount_sats FROM new_rows EXCEPT ALL SELECT payment_hash, paid_at, owner_address, amount_sats FROM old_rows)
     AND NOT EXISTS (SELECT payment_hash, paid_at, owner_address, amount_sats FROM old_rows EXCEPT ALL SELECT payment_hash, paid_at, owner_address, amount_sats FROM new_rows) THEN
    RETURN NULL;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(5402, b)
  FROM (SELECT stats_hash_bucket(payment_hash) AS b FROM old_rows UNION SELECT stats_hash_bucket(payment_hash) FROM new_rows ORDER BY 1) AS buckets;
  INSERT INTO stats_daily AS d (day, owner_address, payments, sats, fee_msat)
  SELECT (r.paid_at AT TIME ZONE 'UTC')::date, r.owner_address, sum(r.sign), coalesce(sum(r.sign * r.amount_sats), 0), coalesce(sum(r.sign * s.fee_msat), 0)
  FROM (SELECT -1 AS sign, payment_hash, paid_at, owner_address, amount_sats FROM old_rows
        UNION ALL SELECT 1, payment_hash, paid_at, owner_address, amount_sats FROM new_rows) AS r
  LEFT JOIN splits s ON s.payment_hash = r.payment_hash
  GROUP BY 1, 2
  HAVING sum(r.sign) <> 0 OR coalesce(sum(r.sign * r.amount_sats), 0) <> 0 OR coalesce(sum(r.sign * s.fee_msat), 0) <> 0
  ORDER BY 1, 2
  ON CONFLICT (day, owner_address) DO UPDATE
    SET payments = d.payments + excluded.payments, sats = d.sats + excluded.sats, fee_msat = d.fee_msat + excluded.fee_msat;
  RETURN NULL;
END $$;

CREATE FUNCTION stats_payments_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM stats_daily;
  RETURN NULL;
END $$;

-- splits: only the fee counts, in the cell of the payment it belongs to -------

CREATE FUNCTION stats_splits_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(5402, b) FROM (SELECT DISTINCT stats_hash_bucket(payment_hash) AS b FROM new_rows ORDER BY 1) AS buckets;
  INSERT INTO stats_daily AS d (day, owner_address, payments, sats, fee_msat)
  SELECT (p.paid_at AT TIME ZONE 'UTC')::date, p.owner_address, 0, 0, sum(n.fee_msat)
  FROM new_rows n JOIN payments p ON p.payment_hash = n.payment_hash
  GROUP BY 1, 2 HAVING sum(n.fee_msat) <> 0 ORDER BY 1, 2
  ON CONFLICT (day, owner_address) DO UPDATE SET fee_msat = d.fee_msat + excluded.fee_msat;
  RETURN NULL;
END $$;

CREATE FUNCTION stats_splits_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(5402, b) FROM (SELECT DISTINCT stats_hash_bucket(payment_hash) AS b FROM old_rows ORDER BY 1) AS buckets;
  INSERT INTO stats_daily AS d (day, owner_address, payments, sats, fee_msat)
  SELECT (p.paid_at AT TIME ZONE 'UTC')::date, p.owner_address, 0, 0, -sum(o.fee_msat)
  FROM old_rows o JOIN payments p ON p.payment_hash = o.payment_hash
  GROUP BY 1, 2 HAVING sum(o.fee_msat) <> 0 ORDER BY 1, 2
  ON CONFLICT (day, owner_address) DO UPDATE SET fee_msat = d.fee_msat + excluded.fee_msat;
  RETURN NULL;
END $$;

CREATE FUNCTION stats_splits_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- State changes (accrued -> pending -> paid) are the usual update and move no fee.
  IF NOT EXISTS (SELECT payment_hash, fee_msat FROM new_rows EXCEPT ALL SELECT payment_hash, fee_msat FROM old_rows)
     AND NOT EXISTS (SELECT payment_hash, fee_msat FROM old_rows EXCEPT ALL SELECT payment_hash, fee_msat FROM new_rows) THEN
    RETURN NULL;
  END IF;
  PERFORM pg_advisory_xact_lock(5402, b)
  FROM (SELECT stats_hash_bucket(payment_hash) AS b FROM old_rows UNION SELECT stats_hash_bucket(payment_hash) FROM new_rows ORDER BY 1) AS buckets;
  INSERT INTO stats_daily AS d (day, owner_address, payments, sats, fee_msat)
  SELECT (p.paid_at AT TIME ZONE 'UTC')::date, p.owner_address, 0, 0, sum(r.fee_msat)
  FROM (SELECT payment_hash, -fee_msat AS fee_msat FROM old_rows UNION ALL SELECT payment_hash, fee_msat FROM new_rows) AS r
  JOIN payments p ON p.payment_hash = r.payment_hash
  GROUP BY 1, 2 HAVING sum(r.fee_msat) <> 0 ORDER BY 1, 2
  ON CONFLICT (day, owner_address) DO UPDATE SET fee_msat = d.fee_msat + excluded.fee_msat;
  RETURN NULL;
END $$;

CREATE FUNCTION stats_splits_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE stats_daily SET fee_msat = 0 WHERE fee_msat <> 0;
  RETURN NULL;
END $$;

-- What the service still owes each owner: owner_msat of the splits not yet
-- paid (accrued, pending, failed). Kept by the split triggers below from their
-- own transition tables, so no other transaction's rows are involved.
CREATE TABLE stats_owed (
  owner_address text PRIMARY KEY,
  owed_msat     bigint NOT NULL
);

CREATE FUNCTION stats_owed_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stats_owed AS o (owner_address, owed_msat)
  SELECT owner_address, sum(owner_msat) FROM new_rows WHERE state <> 'paid'
  GROUP BY 1 HAVING sum(owner_msat) <> 0 ORDER BY 1
  ON CONFLICT (owner_address) DO UPDATE SET owed_msat = o.owed_msat + excluded.owed_msat;
  RETURN NULL;
END $$;

CREATE FUNCTION stats_owed_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stats_owed AS o (owner_address, owed_msat)
  SELECT owner_address, -sum(owner_msat) FROM old_rows WHERE state <> 'paid'
  GROUP BY 1 HAVING sum(owner_msat) <> 0 ORDER BY 1
  ON CONFLICT (owner_address) DO UPDATE SET owed_msat = o.owed_msat + excluded.owed_msat;
  RETURN NULL;
END $$;

CREATE FUNCTION stats_owed_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- accrued -> pending moves nothing (both owed); pending -> paid settles.
  INSERT INTO stats_owed AS o (owner_address, owed_msat)
  SELECT owner_address, sum(owner_msat)
  FROM (SELECT owner_address, -owner_msat AS owner_msat FROM old_rows WHERE state <> 'paid'
        UNION ALL SELECT owner_address, owner_msat FROM new_rows WHERE state <> 'paid') AS r
  GROUP BY 1 HAVING sum(owner_msat) <> 0 ORDER BY 1
  ON CONFLICT (owner_address) DO UPDATE SET owed_msat = o.owed_msat + excluded.owed_msat;
  RETURN NULL;
END $$;

CREATE FUNCTION stats_owed_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM stats_owed;
  RETURN NULL;
END $$;

-- Writers wait here until the back-fill below is committed: no row is counted twice or missed.
LOCK TABLE payments, splits IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER stats_payments_inserted AFTER INSERT ON payments REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION stats_payments_inserted();
CREATE TRIGGER stats_payments_deleted AFTER DELETE ON payments REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION stats_payments_deleted();
CREATE TRIGGER stats_payments_updated AFTER UPDATE ON payments REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION stats_payments_updated();
CREATE TRIGGER stats_payments_truncated AFTER TRUNCATE ON payments FOR EACH STATEMENT EXECUTE FUNCTION stats_payments_truncated();
CREATE TRIGGER stats_splits_inserted AFTER INSERT ON splits REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION stats_splits_inserted();
CREATE TRIGGER stats_splits_deleted AFTER DELETE ON splits REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION stats_splits_deleted();
CREATE TRIGGER stats_splits_updated AFTER UPDATE ON splits REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION stats_splits_updated();
CREATE TRIGGER stats_splits_truncated AFTER TRUNCATE ON splits FOR EACH STATEMENT EXECUTE FUNCTION stats_splits_truncated();

CREATE TRIGGER stats_owed_inserted AFTER INSERT ON splits REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION stats_owed_inserted();
CREATE TRIGGER stats_owed_deleted AFTER DELETE ON splits REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION stats_owed_deleted();
CREATE TRIGGER stats_owed_updated AFTER UPDATE ON splits REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION stats_owed_updated();
CREATE TRIGGER stats_owed_truncated AFTER TRUNCATE ON splits FOR EACH STATEMENT EXECUTE FUNCTION stats_owed_truncated();

-- Back-fill from the rows already there.
INSERT INTO stats_daily (day, owner_address, payments, sats, fee_msat)
SELECT (p.paid_at AT TIME ZONE 'UTC')::date, p.owner_address, count(*), coalesce(sum(p.amount_sats), 0), coalesce(sum(s.fee_msat), 0)
FROM payments p LEFT JOIN splits s ON s.payment_hash = p.payment_hash
GROUP BY 1, 2;

INSERT INTO stats_owed (owner_address, owed_msat)
SELECT owner_address, sum(owner_msat) FROM splits WHERE state <> 'paid' GROUP BY 1;
