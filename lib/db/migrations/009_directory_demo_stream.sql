-- The service's own demo is listed as two entries where it sells prepaid sessions: the BTC price
-- and the metered stream (lib/service/directory/demo-entry.ts). At most one entry per url, as
-- for any entry (apis.url is unique); demo-entry.ts keeps the demo's entries to its routes.
DROP INDEX IF EXISTS apis_one_demo;
