-- scaffold-runtime schema, version 5 (SQLite): nothing. Version 5 gives PostgreSQL's items a
-- `has_inputs` flag so its claim statement probes `item_artifacts` only for items that have
-- inputs; SQLite reads a claim's inputs in one query over the claimed ids
-- (`store/sqlite/ops/lease.rs`), in the claim's own transaction, and needs no flag.
SELECT 1;
