-- Every metered request inserts a reservation and deletes it (and, for a
-- minted key or a budget, rows of reservation_holds and reservation_budgets):
-- these tables hold few live rows and many dead ones. Vacuum them after a
-- fixed number of dead rows, not a fraction of a tiny table, and without
-- the cost-based pause, so that a hot key's index entries do not pile up.
ALTER TABLE reservations SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE reservation_holds SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE reservation_budgets SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000, autovacuum_vacuum_cost_delay = 0);
