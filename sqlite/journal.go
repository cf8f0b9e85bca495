package sqlite

// JournalPath is where the server of the database at path journals the
// charges of whole answers (sqlstore.Ledger.UseJournal): the segments
// JournalPath(path).1, .2, …, which sqlstore.JournalFiles lists. Segments
// left by a server that was killed hold charges it delivered and had not
// written; the next server on the database writes them before it serves.
func JournalPath(path string) string { return path + "-charges" }

// JournalPath is where the charges journal of the database lives (see
// meter.Owned): this process alone serves it.
func (db *DB) JournalPath() string { return JournalPath(db.Path) }
