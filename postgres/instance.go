package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
)

// HoldInstance names this process in the reservations it writes and holds,
// while it lives, a session advisory lock on its name: the lock ends with
// the process however it ends (PostgreSQL drops a dead client's session),
// which is how the others learn it is gone (ChargeGoneInstances). The name
// is registered (table instances) once the lock is held, so that no other
// instance sees it unlocked. The returned function drops the lock. If the
// lock's connection breaks while the process lives, others may charge its
// open reservations early, at what they reserved (their settles then
// charge nothing more), and forget it once none is left: what it reserves
// after that is charged when it expires, as every reservation is.
func (db *DB) HoldInstance(ctx context.Context) (release func(), err error) {
	id := uuid.NewString()
	pooled, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	conn := pooled.Hijack() // the session must stay this process's alone
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, id); err != nil {
		conn.Close(ctx)
		return nil, mapErr(err)
	}
	db.SetInstance(id)
	if err := db.RegisterInstance(ctx); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return func() { conn.Close(context.Background()) }, nil
}

// ChargeGoneInstances charges the open reservations of every registered
// process that is gone (its instance lock is free), at what they reserved,
// forgets the process once none is left, and returns how many it charged.
func (db *DB) ChargeGoneInstances(ctx context.Context) (int, error) {
	ids, err := db.OpenInstances(ctx)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return 0, mapErr(err)
	}
	defer conn.Release()
	total := 0
	for _, id := range ids {
		var gone bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, id).Scan(&gone); err != nil {
			return total, mapErr(err)
		}
		if !gone {
			continue // alive: its reservations are its own
		}
		n, err := db.ChargeInstance(ctx, id)
		total += n
		if err == nil {
			_, err = db.ForgetInstance(ctx, id)
		}
		_, uerr := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, id)
		if err := errors.Join(err, uerr); err != nil {
			return total, err
		}
	}
	return total, nil
}
