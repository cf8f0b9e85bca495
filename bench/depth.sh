#!/usr/bin/env bash
# Depth and neighbours (issue 30): reads at any depth of large lists, and
# one organization's reads beside another's heavy ones, on a running
# server over a seeded database:
#
#   1. the first, middle and last page of each large list of the API, by
#      bench/depth: of one organization, the keys (with and without the
#      disabled ones), members, key and member assignments, a guardrail's
#      key assignments, the default workspace's guardrails and presets, the
#      audit log (the seed puts every key in the default workspace and
#      assigns every key and member, all the keys to one guardrail); of a
#      second, its workspaces; of a third, a workspace's members;
#   2. another organization's read latency (p50, p99, slowest) while the
#      seeded one runs 8 of the heaviest of those reads at once;
#   3. the official client (@openrouter/sdk, compat/node_modules: run
#      `npm ci` in compat/ first) listing every key, offset after offset
#      (compat/paginate-keys.mjs).
#
#   bash bench/depth.sh [sqlite|postgres]
#
# Settings: BENCH_KEYS (1000000: keys, and as many key assignments, less
# the 10,010 the seed keeps unassigned, and audit entries), BENCH_MEMBERS (1000000), BENCH_RUNS (5 reads of each page),
# BENCH_SECONDS (20 s of neighbours), BENCH_PAGINATE (1; 0 skips the
# official client's listing), BENCH_DB_TIMEOUT (the server's
# GATEHOUSE_DB_TIMEOUT, 60s: a cold walk on a loaded machine may pass the
# default 5 s), BENCH_WORK (keep the seeded database
# there, to measure it again without seeding; see bench/seeded.sh).
set -euo pipefail

engine=${1:-sqlite}
keys=${BENCH_KEYS:-1000000}
members=${BENCH_MEMBERS:-1000000}
runs=${BENCH_RUNS:-5}
seconds=${BENCH_SECONDS:-20}
# shellcheck source=bench/seeded.sh
source "$(dirname "$0")/seeded.sh"
prepare depth depth
go build -o "$work/loadgen" ./bench/loadgen

if [[ -s $work/manifest.json ]]; then
	echo "== measuring the database seeded in $work again" >&2
else
	echo "== seeding $keys keys (assigned, audited), guardrails and presets, and $members members ($engine)" >&2
	start=$(date +%s)
	"$work/gatehouse" bench-seed --database "$database" --keys "$keys" --members "$members" --audit \
		--workspaces 1 --guardrails "$keys" --presets "$keys" --assign-every 1 \
		--manifest "$work/manifest.json" 2>&1 | grep -v '^  ' >&2
	echo "== seeding an organization of $keys workspaces, and one with a workspace of $members members" >&2
	"$work/gatehouse" bench-seed --database "$database" --org-name Wide --keys 0 --guardrails 0 --members 0 \
		--workspaces "$keys" --samples 0 >"$work/wide.out" 2>&1
	"$work/gatehouse" bench-seed --database "$database" --org-name Team --keys 0 --guardrails 0 --members "$members" \
		--workspaces 2 --workspace-members "$members" --samples 0 >"$work/team.out" 2>&1
	tail -1 "$work/wide.out" >"$work/wide"
	tail -1 "$work/team.out" >"$work/team"
	echo "== seeded in $(($(date +%s) - start)) s" >&2
fi
mgmt=$(sed -n 's/.*"management_key": *"\([^"]*\)".*/\1/p' "$work/manifest.json")
if [[ ! -s $work/neighbour ]]; then
	org=$("$work/gatehouse" orgs create --name Neighbour --database "$database" | tail -1)
	"$work/gatehouse" mgmt-keys create --org "$org" --database "$database" | tail -1 >"$work/neighbour"
fi
neighbour=$(cat "$work/neighbour")

port=$((20000 + RANDOM % 20000))
GATEHOUSE_DATABASE_URL=$database GATEHOUSE_ADDR=127.0.0.1:$port GATEHOUSE_SECRET_KEY=$(head -c 32 /dev/urandom | base64) \
	GATEHOUSE_RATE_LIMIT_RPS=0 GATEHOUSE_DB_TIMEOUT=${BENCH_DB_TIMEOUT:-60s} GATEHOUSE_LOG_LEVEL=warn "$work/gatehouse" serve >"$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; cleanup' EXIT
"$work/loadgen" -wait -url "http://127.0.0.1:$port/healthz" -timeout 120s >/dev/null || {
	tail -20 "$work/serve.log" >&2
	exit 1
}

echo "($engine, $keys keys, $members members; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
"$work/depth" -url "http://127.0.0.1:$port" -key "$mgmt" -other "$neighbour" -wide "$(cat "$work/wide")" -team "$(cat "$work/team")" \
	-keys "$keys" -members "$members" \
	-runs "$runs" -seconds "$seconds"
if [[ ${BENCH_PAGINATE:-1} == 1 ]]; then
	echo
	echo "The official client listing every key:"
	node "$(pwd)/compat/paginate-keys.mjs" "http://127.0.0.1:$port" "$mgmt" "$keys"
fi
