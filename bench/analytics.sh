#!/usr/bin/env bash
# Times the activity and analytics reads on a ledger of ten million calls:
# seeds a fresh database with `gatehouse bench-seed --generations`, one big
# organization (the calls) and a small one beside it, then runs
# bench/analytics with the indexes of migration 0010_activity_indexes.sql
# and again with the indexes as they were before it.
#
#   bash bench/analytics.sh [sqlite|postgres]
#
# PostgreSQL uses a fresh database on GATEHOUSE_TEST_POSTGRES_URL's server,
# dropped at the end. With BENCH_WORK=DIR the database is kept in DIR (its
# URL in DIR/database for PostgreSQL) and 0010's indexes are built again
# after the second table, so that a later run with the same BENCH_WORK
# measures it again without seeding it again. Settings: BENCH_GENERATIONS (10000000),
# BENCH_GENERATION_DAYS (90), BENCH_KEYS (20000), BENCH_RUNS (5),
# BENCH_RUNS_BEFORE (3, without the indexes), BENCH_OUT (also write the
# tables to this file).
set -euo pipefail

engine=${1:-sqlite}
generations=${BENCH_GENERATIONS:-10000000}
days=${BENCH_GENERATION_DAYS:-90}
keys=${BENCH_KEYS:-20000}
runs=${BENCH_RUNS:-5}
runs_before=${BENCH_RUNS_BEFORE:-3}
# shellcheck source=bench/seeded.sh
source "$(dirname "$0")/seeded.sh"
prepare analytics analytics
restore=()

if [[ -s $work/small.json ]]; then
	echo "== measuring the database seeded in $work again" >&2
else
	echo "== seeding $generations calls over $days days ($engine)" >&2
	start=$(date +%s)
	"$work/gatehouse" bench-seed --database "$database" --keys "$keys" --generations "$generations" \
		--generation-days "$days" --manifest "$work/big.json" 2>&1 | grep -v '^  ' >&2
	"$work/gatehouse" bench-seed --database "$database" --keys 50 --guardrails 5 --members 5 --workspaces 2 \
		--generations 10000 --org-name "Small organization" --manifest "$work/small.json" 2>&1 | grep -v '^  ' >&2
	echo "== seeded in $(($(date +%s) - start)) s" >&2
fi
if [[ $engine == sqlite ]]; then
	ls -l "$database" >&2
fi
if [[ -n $keep ]]; then
	restore=(-restore)
fi

tables=$work/tables.md
"$work/analytics" -database "$database" -manifest "$work/big.json" -small "$work/small.json" -runs "$runs" -vacuum \
	-label "With the indexes of 0010_activity_indexes.sql ($engine, $generations calls over $days days; load average $(cut -d' ' -f1-3 /proc/loadavg)):" \
	>"$tables"
echo >>"$tables"
"$work/analytics" -database "$database" -manifest "$work/big.json" -small "$work/small.json" -runs "$runs_before" -before-0010 "${restore[@]}" \
	-label "With the indexes as they were before 0010 ($engine; load average $(cut -d' ' -f1-3 /proc/loadavg)):" \
	>>"$tables"
cat "$tables"
if [[ -n ${BENCH_OUT:-} ]]; then
	cp "$tables" "$BENCH_OUT"
fi
