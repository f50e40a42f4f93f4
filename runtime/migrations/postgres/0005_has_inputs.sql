-- scaffold-runtime schema, version 5 (PostgreSQL): whether an item has inputs, so a claim
-- reads `item_artifacts` only for the claimed items that have some. Probing the artifacts'
-- index for every claimed item cost a remote worker's claims of 100 about a fifth of their
-- rate, for a queue whose items carry no inputs at all. A constant default: adding the
-- column rewrites no row.
ALTER TABLE work_items ADD COLUMN has_inputs BOOLEAN NOT NULL DEFAULT false;
UPDATE work_items SET has_inputs = true
    WHERE id IN (SELECT item_id FROM item_artifacts WHERE role = 'input');
