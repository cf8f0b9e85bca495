#!/usr/bin/env bash
# Runs every fuzz target of the module, one after another, for the same time
# each, and prints a table: target, package, duration, executions, new corpus
# entries, result (ok, or FAILED with the path of the new crasher, which Go
# writes under the package's testdata/fuzz/<target>/ and which then replays
# with every go test as a regression seed).
#
#   bash bench/fuzz.sh [duration]     duration: as go test -fuzztime takes it
#                                     (30s, 2m, or 5000x); default 30s
#
# The targets are discovered with go test -list '^Fuzz', package by package.
# The HTTP targets fuzz on SQLite, or on PostgreSQL when
# GATEHOUSE_FUZZ_POSTGRES_URL is set (e.g. to
# postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable).
# GATEHOUSE_TEST_POSTGRES_URL is cleared: with it, the HTTP suite's TestMain
# would run each target a second time. (The seeds and crashers replay on
# both engines in the normal test run.) Exits non-zero if any target failed.
set -euo pipefail

duration=${1:-30s}
if [[ $# -gt 1 || ! $duration =~ ^[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|x)$ ]]; then
	echo "usage: bash bench/fuzz.sh [duration]   (e.g. 30s, 2m, 5000x)" >&2
	exit 2
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
unset GATEHOUSE_TEST_POSTGRES_URL

cache=$(go env GOCACHE)/fuzz
logs=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-fuzz.XXXXXX")

# corpus_count prints how many entries the fuzzing cache holds for a target.
corpus_count() {
	local dir=$cache/$1/$2
	if [[ -d $dir ]]; then
		find "$dir" -type f | wc -l | tr -d ' '
	else
		echo 0
	fi
}

# List the targets: "package target" lines. go test -list prints a
# package's names, then its "ok <package>" line.
echo "discovering fuzz targets..." >&2
if ! go test -run '^$' -list '^Fuzz' ./... >"$logs/list" 2>&1; then
	cat "$logs/list" >&2
	echo "go test -list failed" >&2
	exit 1
fi
targets=()
names=()
while IFS= read -r line; do
	if [[ $line =~ ^Fuzz[A-Za-z0-9_]*$ ]]; then
		names+=("$line")
	elif [[ $line =~ ^ok[[:space:]]+([^[:space:]]+) ]]; then
		pkg=${BASH_REMATCH[1]}
		for name in "${names[@]+"${names[@]}"}"; do
			targets+=("$pkg $name")
		done
		names=()
	fi
done <"$logs/list"
# A TestMain may list its tests more than once: keep each target once.
mapfile -t targets < <(printf '%s\n' "${targets[@]+"${targets[@]}"}" | awk 'NF && !seen[$0]++')
if [[ ${#targets[@]} -eq 0 ]]; then
	echo "no fuzz targets found" >&2
	exit 1
fi
echo "${#targets[@]} targets, $duration each; logs in $logs" >&2

rows=()
failed=0
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	log=$logs/$(basename "$pkg")-$name.log
	before=$(corpus_count "$pkg" "$name")
	echo "fuzzing $pkg $name for $duration..." >&2
	start=$(date +%s)
	if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$duration" "$pkg" >"$log" 2>&1; then
		result=ok
	else
		result=FAILED
		failed=1
		crasher=$(sed -n 's/.*Failing input written to \(.*\)$/\1/p' "$log" | tail -n 1)
		if [[ -n $crasher ]]; then
			dir=$(go list -f '{{.Dir}}' "$pkg")
			result="FAILED $(realpath --relative-to="$root" "$dir/$crasher" 2>/dev/null || echo "$dir/$crasher")"
		else
			result="FAILED (no crasher written; see $log)"
		fi
	fi
	elapsed=$(($(date +%s) - start))s
	after=$(corpus_count "$pkg" "$name")
	# The last progress line: "fuzz: elapsed: 30s, execs: 12345 (411/sec), new interesting: 5 (total: 80)".
	execs=$(sed -n 's/.*execs: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
	if [[ -z $execs ]]; then # the time went to replaying the corpus
		execs="0 (baseline $(sed -n 's/.*gathering baseline coverage: \([0-9]*\/[0-9]*\).*/\1/p' "$log" | tail -n 1))"
	fi
	rows+=("$name|$pkg|$elapsed|$execs|$((after - before))|$result")
done

echo
{
	echo "TARGET|PACKAGE|TIME|EXECS|NEW CORPUS|RESULT"
	printf '%s\n' "${rows[@]}"
} | column -t -s '|'

if [[ $failed -ne 0 ]]; then
	echo
	echo "some targets failed; their logs are in $logs" >&2
	exit 1
fi
rm -rf "$logs"
