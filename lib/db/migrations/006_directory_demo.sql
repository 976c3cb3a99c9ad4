-- The service's own demo in its directory (lib/service/directory/demo-entry.ts): the entry
-- is marked, listed with `demo: true`, and there is at most one.
ALTER TABLE apis ADD COLUMN demo boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX apis_one_demo ON apis (demo) WHERE demo;
