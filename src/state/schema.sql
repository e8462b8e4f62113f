-- mesh-host state store, schema version 3 (Store::kSchemaVersion).
-- Embedded into the binary at build time and run once, inside a transaction, on an
-- empty database; store/open.cc then stamps PRAGMA application_id and user_version.
-- docs/state-store.md describes every column. Never store a secret here: credentials
-- appear only as keyed digests computed by the credential kind.

-- One row per resource mesh-host has written: the hint and fast path for the next
-- cycle, and the proof of ownership that allows `removed`.
CREATE TABLE records (
  id            TEXT PRIMARY KEY NOT NULL,   -- "<module>.<name>"
  module        TEXT NOT NULL,
  kind          TEXT NOT NULL,
  path          TEXT NOT NULL DEFAULT '',
  want          TEXT NOT NULL DEFAULT '',
  wrote         TEXT NOT NULL DEFAULT '',
  outcome       TEXT NOT NULL DEFAULT '',
  reason        TEXT NOT NULL DEFAULT '',
  detail        TEXT NOT NULL DEFAULT '',
  changed_at    INTEGER NOT NULL DEFAULT 0,
  changed_cycle INTEGER NOT NULL DEFAULT 0,
  changes       INTEGER NOT NULL DEFAULT 0,
  observed      TEXT NOT NULL DEFAULT ''
);

-- Every distinct declaration text applied, within the store's bounds (old ones are
-- trimmed: store/retention.cc). Numbered by SQLite's rowid; the newest row is never
-- trimmed, so a number is never reused. `source` and `base_dir` (from the
-- latest apply of the text) let `rollback` resolve relative paths as that apply did.
-- `last_cycle` and `last_failed`: the newest finished cycle that applied it and its
-- failures (schema version 3), kept here so that trimming cycles never loses them.
-- The text itself is in generation_texts: every apply updates this row, and SQLite
-- rewrites a whole row to update it.
CREATE TABLE generations (
  generation       INTEGER PRIMARY KEY,
  digest           TEXT NOT NULL UNIQUE,
  first_applied_at INTEGER NOT NULL,
  last_applied_at  INTEGER NOT NULL,
  source           TEXT NOT NULL DEFAULT '',  -- the declaration file as given
  base_dir         TEXT NOT NULL DEFAULT '',  -- absolute dir relative `from` paths resolve in
  serial           INTEGER,                   -- the declaration's `serial`; NULL when it has none
  last_cycle       INTEGER NOT NULL DEFAULT 0,  -- newest finished cycle of it; 0 none
  last_failed      INTEGER NOT NULL DEFAULT 0   -- resources that failed in that cycle
);

-- Each generation's declaration text, written with its generation and never updated
-- (schema version 2; version 1 kept it in generations.text); trimmed with it.
CREATE TABLE generation_texts (
  generation INTEGER PRIMARY KEY,  -- generations.generation
  text       TEXT NOT NULL
);

-- The bounds the last trim that dropped anything ran with (schema version 3), so
-- that `generations`, `rollback` and `history` can say what was trimmed and why.
CREATE TABLE retention (
  id               INTEGER PRIMARY KEY CHECK (id = 1),
  keep_generations INTEGER NOT NULL,
  keep_cycles      INTEGER NOT NULL,
  keep_days        INTEGER NOT NULL,
  min_generations  INTEGER NOT NULL,
  min_cycles       INTEGER NOT NULL,
  trimmed_at       INTEGER NOT NULL   -- unix ms
);

-- One row per cycle (the newest ones, within the store's bounds). AUTOINCREMENT (not a plain rowid) so that a cycle number is never
-- handed out twice, even if the newest rows are ever deleted.
-- No foreign key to generations: a cycle may run before any generation is recorded
-- (generation 0), and the store must not fail a cycle over bookkeeping order.
CREATE TABLE cycles (
  cycle       INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at  INTEGER NOT NULL,
  finished_at INTEGER NOT NULL DEFAULT 0,   -- 0: running, or the process died mid-cycle
  generation  INTEGER NOT NULL DEFAULT 0,
  created     INTEGER NOT NULL DEFAULT 0,
  updated     INTEGER NOT NULL DEFAULT 0,
  unchanged   INTEGER NOT NULL DEFAULT 0,
  removed     INTEGER NOT NULL DEFAULT 0,
  failed      INTEGER NOT NULL DEFAULT 0,
  ms          INTEGER NOT NULL DEFAULT 0,
  node        TEXT NOT NULL DEFAULT '',     -- the name the cycle ran as (--node)
  released    INTEGER NOT NULL DEFAULT 0,   -- no longer declared, left in place
  skipped     INTEGER NOT NULL DEFAULT 0    -- not tried: a requirement did not converge
);

-- Outcomes that were not `unchanged`, for the last Store::kHistoryCycles cycles.
-- The rowid orders entries within one cycle (newest last).
CREATE TABLE history (
  cycle   INTEGER NOT NULL,
  id      TEXT NOT NULL,
  outcome TEXT NOT NULL,
  reason  TEXT NOT NULL DEFAULT '',
  want    TEXT NOT NULL DEFAULT '',
  wrote   TEXT NOT NULL DEFAULT '',
  at      INTEGER NOT NULL
);
-- `status` and churn detection read one resource's recent history.
CREATE INDEX history_by_id ON history (id, cycle);
-- Trimming deletes by cycle, and the unfiltered history reads newest cycles first.
CREATE INDEX history_by_cycle ON history (cycle);

-- Restarts owed to processes. Intent first: before a cause (a restart-on resource,
-- or the process's own unit or bundle) is changed, a row with `intent` = the digest
-- it is about to hold is written and synced; the transaction that records the
-- change confirms it (intent = ''); the one that records the process (re)started
-- deletes it. A crash anywhere in between leaves the row: the next cycle pays a
-- confirmed row, and an intent when the cause holds `intent` by then (the change
-- happened); an intent whose change never happened is cancelled, not paid.
CREATE TABLE owed_restarts (
  process TEXT NOT NULL,      -- the process resource's id
  cause   TEXT NOT NULL,      -- the id whose change owes it
  cycle   INTEGER NOT NULL,   -- cycle that recorded it
  at      INTEGER NOT NULL,   -- unix ms; a service started after this has paid it
  intent  TEXT NOT NULL DEFAULT '',  -- '' confirmed; else the digest the cause was to hold
  kind    TEXT NOT NULL DEFAULT 'restart',  -- 'restart' (restart-on, own unit) or 'reload' (reload-on)
  PRIMARY KEY (process, cause)
);

-- What each declared process restarts (kind 'restart') or reloads ('reload') on, as
-- the newest cycle declared it, and a cause it no longer lists while the cause's record
-- is still there (its removal has yet to be done). A cycle that removes a resource a
-- process listed here restarts (reloads) it once: the process's input went away.
CREATE TABLE IF NOT EXISTS process_causes (
  process TEXT NOT NULL,                   -- the process resource's id
  cause   TEXT NOT NULL,                   -- the id it restarts or reloads on
  kind    TEXT NOT NULL DEFAULT 'restart', -- 'restart' or 'reload'
  PRIMARY KEY (process, cause)
);

-- Fleet mode (`run --etcd`): the pushed declaration this node last started a cycle
-- with, exactly as it came from etcd, and its revision. When etcd is unreachable at
-- start the agent converges to it (after checking its signature again), and it
-- resumes its watch after `revision`. At most one row per etcd key.
CREATE TABLE IF NOT EXISTS fleet_declaration (
  key         TEXT PRIMARY KEY NOT NULL,  -- /mesh/<cluster>/nodes/<node>/declaration
  revision    INTEGER NOT NULL,           -- its etcd mod revision
  envelope    TEXT NOT NULL,              -- the value as put (JSON: declaration, signature …)
  received_at INTEGER NOT NULL            -- unix ms
);

-- The declaration last parsed by an apply, compiled (the parsed and ordered model in
-- a compact binary form), so that the next apply of the same text does not parse it
-- again. `key` covers the text's digest, what parsing depended on and the mesh-host
-- binary (version and build-id); any other key, or a form that does not decode to
-- the letter (it carries its own SHA-256), is ignored and the text parsed. One row.
CREATE TABLE IF NOT EXISTS compiled_declaration (
  key  TEXT PRIMARY KEY NOT NULL,  -- "sha256:…" (src/decl/compiled.hh compiledKey)
  form BLOB NOT NULL
);
