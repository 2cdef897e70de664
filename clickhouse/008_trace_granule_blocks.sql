-- A trace read by its key (GET /v1/traces/{id}, a search's page, a session's traces) reads one
-- granule of each column, but ClickHouse decompresses the whole compressed block that holds it: by
-- default at least 64 KiB of each column, twenty granules of a number column. With blocks cut at
-- every granule once they hold 1 KiB, a read of 51 scattered traces of the 100M-span bench dataset
-- went from 99 to 47 ms (p50 of 40 random pages, warm; copies of the same 10M rows), for 4% more disk.
-- New parts get it; older ones when they are merged (OPTIMIZE TABLE traces FINAL rewrites them at once).
ALTER TABLE traces {on_cluster} MODIFY SETTING min_compress_block_size = 1024;
