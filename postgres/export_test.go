package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// Pool lets tests read the database directly.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }
