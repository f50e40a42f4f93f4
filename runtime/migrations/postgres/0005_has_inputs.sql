-- scaffold-runtime schema, version 5 (PostgreSQL): whether an item has inputs, so a claim
-- reads `item_artifacts` only for the claimed items that have some. Probing the artifacts'
-- index for every claimed item cost a remote worker's claims of 100 about a fifth of their
-- rate, for a queue whose items carry no inputs at all. A constant default: adding the
-- column rewrites no row.
ALTER TABLE work_items ADD COLUMN has_inputs BOOLEAN NOT NULL DEFAULT false;
UPDATE work_items SET has_inputs = true
    WHERE id IN (SELECT item_id FROM item_artifacts WHERE role = 'input');

-- Kept by the database, not by the writer: an input row sets its item's flag whoever writes
-- it, so a producer of the previous version still running while this migration lands (it
-- checked the schema when it opened) cannot attach inputs a claim would then not hand out.
-- The function keeps this schema's search_path, whatever the inserting session's is.
CREATE FUNCTION scaffold_flag_inputs() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE work_items SET has_inputs = true WHERE id = NEW.item_id AND NOT has_inputs;
    RETURN NULL;
END $$;
CREATE TRIGGER item_artifacts_flag_inputs AFTER INSERT ON item_artifacts
    FOR EACH ROW WHEN (NEW.role = 'input') EXECUTE FUNCTION scaffold_flag_inputs();
