#!/usr/bin/env bash
# Times the server-side render of the web console's pages on an
# organization of a million keys: seeds a fresh database with `gatehouse
# bench-seed --keys 1000000` (with a ledger of calls, the audit log of the
# keys' creations, and members in the workspaces), then runs
# bench/console, which renders each page through the real handlers.
#
#   bash bench/console.sh [sqlite|postgres]
#
# PostgreSQL uses a fresh database on GATEHOUSE_TEST_POSTGRES_URL's server,
# dropped at the end. With BENCH_WORK=DIR the database is kept in DIR (its
# URL in DIR/database for PostgreSQL), so that a later run with the same
# BENCH_WORK measures it again without seeding it again. Settings:
# BENCH_KEYS (1000000), BENCH_MEMBERS (1000), BENCH_WORKSPACE_MEMBERS
# (100, in each workspace but the default), BENCH_GENERATIONS (300000),
# BENCH_GENERATION_DAYS (90), BENCH_RUNS (20), BENCH_OUT (also write the
# table to this file).
set -euo pipefail

engine=${1:-sqlite}
keys=${BENCH_KEYS:-1000000}
members=${BENCH_MEMBERS:-1000}
workspace_members=${BENCH_WORKSPACE_MEMBERS:-100}
generations=${BENCH_GENERATIONS:-300000}
days=${BENCH_GENERATION_DAYS:-90}
runs=${BENCH_RUNS:-20}
# shellcheck source=bench/seeded.sh
source "$(dirname "$0")/seeded.sh"
prepare console console

if [[ -s $work/manifest.json ]]; then
	echo "== measuring the database seeded in $work again" >&2
else
	echo "== seeding $keys keys and $generations calls over $days days ($engine)" >&2
	start=$(date +%s)
	"$work/gatehouse" bench-seed --database "$database" --keys "$keys" --members "$members" \
		--workspace-members "$workspace_members" --audit \
		--generations "$generations" --generation-days "$days" --manifest "$work/manifest.json" 2>&1 | grep -v '^  ' >&2
	echo "== seeded in $(($(date +%s) - start)) s" >&2
fi

echo "($engine, $keys keys, $members members, $generations calls over $days days, $keys audit entries; load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
"$work/console" -database "$database" -manifest "$work/manifest.json" -runs "$runs" ${BENCH_OUT:+-out "$BENCH_OUT"}
