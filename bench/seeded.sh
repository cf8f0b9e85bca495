# Sourced by the benchmarks that time reads of one seeded database
# (console.sh, analytics.sh); not run on its own.
#
# prepare NAME TOOL: builds gatehouse and bench/TOOL into $work and sets
# $database for $engine (sqlite or postgres, else the usage is printed):
# a SQLite file in $work, or a fresh database on GATEHOUSE_TEST_POSTGRES_URL's
# server (its URL kept in $work/database). $work is BENCH_WORK when set,
# kept with the database for a later run that measures it again without
# seeding it again; else a temporary directory, removed with the database
# on exit.
prepare() {
	local name=$1 tool=$2
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	keep=${BENCH_WORK:-}
	work=${keep:-$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-$name-XXXXXX")}
	mkdir -p "$work"
	database=
	trap cleanup EXIT
	cd "$repo"
	go build -o "$work/gatehouse" ./cmd/gatehouse
	go build -o "$work/$tool" "./bench/$tool"
	case $engine in
	sqlite)
		database=$work/gatehouse.db
		;;
	postgres)
		: "${GATEHOUSE_TEST_POSTGRES_URL:?set GATEHOUSE_TEST_POSTGRES_URL to a PostgreSQL server}"
		go build -o "$work/pgdb" ./bench/pgdb
		if [[ -s $work/database ]]; then
			database=$(cat "$work/database")
		else
			database=$("$work/pgdb" create "$GATEHOUSE_TEST_POSTGRES_URL" "gatehouse_$name")
			echo "$database" >"$work/database"
		fi
		;;
	*)
		echo "usage: bash bench/$name.sh [sqlite|postgres]" >&2
		exit 2
		;;
	esac
}

# cleanup drops the database and removes $work, unless BENCH_WORK keeps them.
cleanup() {
	if [[ -n $keep ]]; then
		return
	fi
	if [[ $engine == postgres && -n $database ]]; then
		"$work/pgdb" drop "$database" || true
	fi
	rm -rf "$work"
}
