-- An OTLP trace's row is derived at ingest, one group commit at a time, and its started_at (part of
-- the sorting key) moves when an earlier span arrives, typically the root, which ends last. The
-- commit that moves it also writes a tombstone (is_deleted = 1) under the old key with the new
-- version: FINAL keeps the tombstone as that key's newest row, and every reader of `traces FINAL`
-- skips is_deleted rows, so the list never shows two versions of a trace and no mutation (DELETE)
-- is needed. A column, not ReplacingMergeTree's is_deleted parameter: engine parameters cannot be
-- altered in place, and the table would have to be copied.
ALTER TABLE traces {on_cluster} ADD COLUMN IF NOT EXISTS is_deleted UInt8 DEFAULT 0;
