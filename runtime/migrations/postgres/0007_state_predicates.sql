-- scaffold-runtime schema, version 7 (PostgreSQL): nothing. Version 7 rewrites SQLite's
-- CHECK constraint and partial-index predicates on `state` from `IN (…)` lists to `OR`
-- chains, because SQLite builds an ephemeral table to evaluate each such list on every row
-- it writes. PostgreSQL evaluates `state IN (…)` as an array comparison, with no such cost,
-- and keeps its version-6 schema.
SELECT 1;
