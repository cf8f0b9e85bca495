#!/usr/bin/env bash
# Gatehouse load benchmarks: bash bench/run.sh [sqlite|postgres] [--scale]
#
# Builds the binaries, starts Gatehouse on a fresh database (PostgreSQL: a
# new database on the server of GATEHOUSE_TEST_POSTGRES_URL, dropped at the
# end), seeds it with `gatehouse bench-seed`, and runs every scenario: for
# each, BENCH_RUNS runs against Gatehouse and as many against a baseline
# server answering the same bytes (bench/baseline), interleaved, each run
# with its own warm-up. Prints one table. --scale then does it again for the
# read scenarios and bulk remove on a database of 1,000,000 keys, 100,000
# guardrails, 100,000 members and 10,000 workspaces, and reports start-up
# time, resident memory and the latency of a lone bulk remove.
#
# Settings (environment): BENCH_CONCURRENCY (32), BENCH_DURATION (5s),
# BENCH_WARMUP (1s), BENCH_RUNS (3), BENCH_LOG_LEVEL (info: one log line
# per request, as in production), BENCH_PG_POOL (PostgreSQL: the server's
# pool_max_conns), BENCH_SCENARIOS (a regular expression over scenario
# names; default all). Needs go and jq.
set -euo pipefail

ENGINE=sqlite
SCALE=0
for arg in "$@"; do
  case "$arg" in
    sqlite | postgres) ENGINE=$arg ;;
    --scale) SCALE=1 ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: bash bench/run.sh [sqlite|postgres] [--scale]" >&2; exit 2 ;;
  esac
done
CONC=${BENCH_CONCURRENCY:-32}
DUR=${BENCH_DURATION:-5s}
WARM=${BENCH_WARMUP:-1s}
RUNS=${BENCH_RUNS:-3}
ONLY=${BENCH_SCENARIOS:-.}
command -v jq > /dev/null || { echo "bench/run.sh needs jq" >&2; exit 1; }
if [[ $ENGINE == postgres && -z ${GATEHOUSE_TEST_POSTGRES_URL:-} ]]; then
  echo "postgres: set GATEHOUSE_TEST_POSTGRES_URL to a server where databases may be created," >&2
  echo "  e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable" >&2
  exit 2
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-bench.XXXXXX")
BIN=$WORK/bin
PIDS=()
DATABASES=()
cleanup() {
  local pid db
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
  done
  for db in "${DATABASES[@]}"; do
    "$BIN/pgdb" drop "$db" || echo "could not drop $db" >&2
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "bench: $*" >&2; }

# forget PID: drop a process that has been stopped from the cleanup list.
forget() {
  local keep=() p
  for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}

stop() {
  kill "$1" 2> /dev/null || true
  wait "$1" 2> /dev/null || true
  forget "$1"
}

# free_port prints a TCP port of 127.0.0.1 that nothing listens on.
free_port() {
  local p
  while :; do
    # Below Linux's ephemeral range (32768-60999): a port that an outgoing
    # connection (to PostgreSQL, say) holds cannot be listened on.
    p=$((10000 + RANDOM % 22000))
    if ! (exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null; then
      echo "$p"
      return
    fi
  done
}

log "building into $BIN"
(cd "$ROOT" && for cmd in cmd/gatehouse cmd/fakellm bench/loadgen bench/baseline bench/pgdb; do
  go build -o "$BIN/$(basename "$cmd")" "./$cmd"
done)

MGMT=sk-gh-mgmt-v1-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
SECRET=$(head -c 32 /dev/urandom | base64)

# new_database NAME prints the URL of a fresh empty database.
new_database() {
  if [[ $ENGINE == sqlite ]]; then
    echo "$WORK/$1.db"
  else
    "$BIN/pgdb" create "$GATEHOUSE_TEST_POSTGRES_URL" "gatehouse_bench_$1"
  fi
}

# GH_ENV runs a command with the settings of every Gatehouse process; the
# database comes after it.
GH_ENV=(env GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY="$MGMT" GATEHOUSE_SECRET_KEY="$SECRET" GATEHOUSE_RATE_LIMIT_RPS=0
  GATEHOUSE_LOG_LEVEL="${BENCH_LOG_LEVEL:-info}" GATEHOUSE_LOG_FORMAT=json GATEHOUSE_PROVIDERS_FILE="$WORK/providers.yaml")

# seed DB MANIFEST ARGS...: bench-seed into a fresh database.
seed() {
  local db=$1 manifest=$2
  shift 2
  log "seeding: $*"
  local t0=$SECONDS
  "${GH_ENV[@]}" GATEHOUSE_DATABASE_URL="$db" "$BIN/gatehouse" bench-seed --manifest "$manifest" "$@" > "$WORK/seed.out" 2> "$WORK/seed.err" ||
    { cat "$WORK/seed.err" >&2; return 1; }
  SEED_SECONDS=$((SECONDS - t0))
  tail -1 "$WORK/seed.err" >&2
}

# start_gatehouse DB: sets GH_PID, GH (base URL) and STARTUP_MS (from exec
# to the first 200 of /healthz).
start_gatehouse() {
  local port t0 t1 db=$1
  if [[ $ENGINE == postgres && -n ${BENCH_PG_POOL:-} ]]; then
    [[ $db == *\?* ]] && db="$db&pool_max_conns=$BENCH_PG_POOL" || db="$db?pool_max_conns=$BENCH_PG_POOL"
  fi
  port=$(free_port)
  GH=http://127.0.0.1:$port
  : > "$WORK/gatehouse.log"
  t0=$(date +%s%N)
  # A simple command, not a function, so that $! is Gatehouse itself.
  "${GH_ENV[@]}" GATEHOUSE_DATABASE_URL="$db" GATEHOUSE_ADDR="127.0.0.1:$port" "$BIN/gatehouse" serve \
    >> "$WORK/gatehouse.log" 2>&1 &
  GH_PID=$!
  PIDS+=("$GH_PID")
  t1=$("$BIN/loadgen" -wait -url "$GH/healthz" -timeout 120s) || { tail -20 "$WORK/gatehouse.log" >&2; return 1; }
  STARTUP_MS=$(((t1 - t0) / 1000000))
  log "gatehouse (pid $GH_PID) serving at $GH, ready ${STARTUP_MS} ms after exec"
}

# rss PID prints "VmRSS VmHWM" in MiB.
rss() {
  awk '/^VmRSS|^VmHWM/ {v[$1] = $2} END {printf "%.0f %.0f\n", v["VmRSS:"] / 1024, v["VmHWM:"] / 1024}' "/proc/$1/status"
}

# The upstream of the chat scenario.
LLM_PORT=$(free_port)
"$BIN/fakellm" --addr "127.0.0.1:$LLM_PORT" 2> /dev/null &
PIDS+=($!)
LLM=http://127.0.0.1:$LLM_PORT
cat > "$WORK/providers.yaml" << EOF
providers:
  - id: fake
    base_url: $LLM/v1
    models:
      - id: echo
        prompt_price: 0.15
        completion_price: 0.60
        max_completion_tokens: 100
EOF
"$BIN/loadgen" -wait -url "$LLM/v1/models" -timeout 30s > /dev/null

# make_requests MANIFEST DIR: the paths and request files of the scenarios.
make_requests() {
  local m=$1 d=$2
  mkdir -p "$d"
  jq -r '.key_hashes[] | "/api/v1/keys/" + .' "$m" > "$d/keys.paths"
  jq -r '.guardrail_ids[] | "/api/v1/guardrails/" + .' "$m" > "$d/guardrails.paths"
  jq -c '.workspaces[] | select(.user_ids | length > 0) |
    {method: "POST", path: ("/api/v1/workspaces/" + .id + "/members/remove"), body: {user_ids: .user_ids}}' "$m" > "$d/remove.jsonl"
  jq -c '.workspaces[] | select(.user_ids | length > 0) |
    {method: "POST", path: ("/api/v1/workspaces/" + .id + "/members/add"), body: {user_ids: .user_ids}}' "$m" > "$d/add.jsonl"
  # Batches of 100 keys moved to one guardrail, then all back to the other:
  # every request changes 100 assignments.
  jq -c '.assign_guardrail_ids as $g | [.assign_key_hashes | _nwise(100) | select(length == 100)] as $b |
    ($g[0], $g[1]) as $gid | $b[] |
    {method: "POST", path: ("/api/v1/guardrails/" + $gid + "/assignments/keys"), body: {key_hashes: .}}' "$m" > "$d/assign.jsonl"
  REGULAR_KEY=$(jq -r '.regular_keys[0]' "$m")
}

CHAT_BODY='{"model": "fake/echo", "messages": [{"role": "user", "content": "Hello, gateway! How are you today?"}]}'

# scenario_args NAME: prints the loadgen arguments of a scenario against
# Gatehouse, one per line; the base URL is left out (-url is added by the
# caller). The baseline gets the same arguments against its own URL.
scenario_args() {
  local mg="Authorization: Bearer $MGMT" d=$REQ
  case $1 in
    get-key) printf '%s\n' -path /api/v1/key -header "Authorization: Bearer $REGULAR_KEY" ;;
    get-key-by-hash) printf '%s\n' -paths-file "$d/keys.paths" -header "$mg" ;;
    get-guardrail) printf '%s\n' -paths-file "$d/guardrails.paths" -header "$mg" ;;
    list-guardrails) printf '%s\n' -path '/api/v1/guardrails?limit=100' -header "$mg" ;;
    patch-key) printf '%s\n' -paths-file "$d/keys.paths" -method PATCH -body '{"name": "bench-{{.N}}"}' -header "$mg" ;;
    create-key) printf '%s\n' -path /api/v1/keys -method POST -body '{"name": "bench-new-{{.N}}"}' -header "$mg" ;;
    bulk-remove-100-members) printf '%s\n' -requests-file "$d/remove.jsonl" -once -header "$mg" ;;
    bulk-assign-100-keys) printf '%s\n' -requests-file "$d/assign.jsonl" -header "$mg" ;;
    chat-completions) printf '%s\n' -path /api/v1/chat/completions -method POST -body "$CHAT_BODY" \
      -header "Authorization: Bearer $REGULAR_KEY" ;;
  esac
}

# loadgen BASE ARGS...: loadgen with -path PATH turned into -url BASE+PATH.
loadgen() {
  local base=$1 args=()
  shift
  while (($#)); do
    if [[ $1 == -path ]]; then
      args+=(-url "$base$2")
      shift 2
    else
      args+=("$1")
      shift
    fi
  done
  [[ " ${args[*]} " == *" -url "* ]] || args+=(-url "$base")
  "$BIN/loadgen" "${args[@]}"
}

# refill puts back the members that bulk-remove runs took out: the
# workspaces of the first $USED remove requests.
USED=0
refill() {
  ((USED > 0)) || return 0
  head -n "$USED" "$REQ/add.jsonl" > "$WORK/refill.jsonl"
  loadgen "$GH" -requests-file "$WORK/refill.jsonl" -once -header "Authorization: Bearer $MGMT" \
    -concurrency "$CONC" -warmup 0 -duration 30m -json > "$WORK/refill.json"
  local errors
  errors=$(jq .errors "$WORK/refill.json")
  [[ $errors == 0 ]] || log "refill: $errors errors: $(jq -c .status "$WORK/refill.json")"
  USED=0
}

# used RESULT: counts the remove requests a run may have sent (those
# measured, and those still in flight at the end).
used() { USED=$((USED + $(jq .requests "$1") + CONC + 1)); }

# run_scenario LABEL NAME: runs and records one scenario into $RESULTS.
run_scenario() {
  local label=$1 name=$2 dir=$WORK/results/$1/$2 args meta base_pid base_port base
  [[ $name =~ $ONLY ]] || return 0
  mkdir -p "$dir"
  mapfile -t args < <(scenario_args "$name")
  # The baseline answers with the bytes of one real answer.
  meta=$(loadgen "$GH" "${args[@]}" -record "$dir/response") || { log "$name: could not record a response"; return 1; }
  [[ $name == bulk-remove-100-members ]] && USED=1
  if [[ $name == chat-completions ]]; then
    base=$LLM
  else
    base_port=$(free_port)
    "$BIN/baseline" -addr "127.0.0.1:$base_port" -response-file "$dir/response" -status "$(jq .status <<< "$meta")" \
      -content-type "$(jq -r .content_type <<< "$meta")" 2> "$dir/baseline.log" &
    base_pid=$!
    PIDS+=("$base_pid")
    base=http://127.0.0.1:$base_port
    "$BIN/loadgen" -wait -url "$base/healthz" -timeout 30s > /dev/null || { cat "$dir/baseline.log" >&2; return 1; }
  fi
  # The baseline rotates where Gatehouse uses each request once: it changes
  # nothing, and would run out in a moment.
  local baseline_args=() a warm=$WARM
  for a in "${args[@]}"; do [[ $a == -once ]] || baseline_args+=("$a"); done
  # A run that uses each request once warms up on none: the warm-up would
  # use up the requests.
  [[ " ${args[*]} " == *" -once "* ]] && warm=0
  if [[ $name == chat-completions ]]; then
    baseline_args=(-path /v1/chat/completions -method POST -body "${CHAT_BODY/fake\/echo/echo}")
  fi
  log "$label $name: response $(jq -c . <<< "$meta")"
  local r
  for ((r = 1; r <= RUNS; r++)); do
    [[ $name == bulk-remove-100-members ]] && refill
    loadgen "$GH" "${args[@]}" -concurrency "$CONC" -warmup "$warm" -duration "$DUR" -json > "$dir/gatehouse.$r.json"
    [[ $name == bulk-remove-100-members ]] && used "$dir/gatehouse.$r.json"
    loadgen "$base" "${baseline_args[@]}" -concurrency "$CONC" -warmup "$WARM" -duration "$DUR" -json > "$dir/baseline.$r.json"
    log "  run $r: gatehouse $(jq -r '"\(.rps | floor)/s p99 \(.latency_ms.p99)ms errors \(.errors)"' "$dir/gatehouse.$r.json")," \
      "baseline $(jq -r '"\(.rps | floor)/s"' "$dir/baseline.$r.json")"
  done
  [[ -n ${base_pid:-} ]] && stop "$base_pid"
  : > "$WORK/gatehouse.log" # the request log of a scenario is not kept
  echo "$name" >> "$WORK/results/$label/order"
}

# lone_bulk_remove LABEL: the latency of bulk removes sent one at a time.
lone_bulk_remove() {
  [[ bulk-remove-100-members =~ $ONLY ]] || return 0
  refill
  loadgen "$GH" -requests-file "$REQ/remove.jsonl" -once -header "Authorization: Bearer $MGMT" \
    -concurrency 1 -warmup 0 -duration 3s -json > "$WORK/results/$1/lone-remove.json"
  used "$WORK/results/$1/lone-remove.json"
}

# table LABEL: prints the table of one set of results.
table() {
  local label=$1 name dir
  printf '\n### %s (%s, %s clients, %s runs of %s)\n\n' "$label" "$ENGINE" "$CONC" "$RUNS" "$DUR"
  echo '| scenario | gatehouse req/s: median [min–max] | p50 ms | p99 ms | errors | baseline req/s: median [min–max] | ratio |'
  echo '|---|---|---|---|---|---|---|'
  while read -r name; do
    dir=$WORK/results/$label/$name
    jq -s -r --arg name "$name" '
      def med: sort | .[length / 2 | floor];
      def fmt: if . >= 100 then floor | tostring else (. * 10 | floor) / 10 | tostring end;
      (map(select(.target == "g"))) as $g | (map(select(.target == "b"))) as $b |
      ($g | map(.rps)) as $gr | ($b | map(.rps)) as $br |
      "| \($name) | \($gr | med | fmt) [\($gr | min | fmt)–\($gr | max | fmt)] | " +
      "\($g | map(.latency_ms.p50) | med * 100 | round / 100) | \($g | map(.latency_ms.p99) | med * 100 | round / 100) | " +
      "\($g | map(.errors) | add) | \($br | med | fmt) [\($br | min | fmt)–\($br | max | fmt)] | " +
      "\(if ($br | med) > 0 then ($gr | med) / ($br | med) | (if . < 0.1 then . * 1000 | round / 1000 else . * 100 | round / 100 end) else "n/a" end) |"' \
      <(for f in "$dir"/gatehouse.*.json; do jq -c '. + {target: "g"}' "$f"; done
        for f in "$dir"/baseline.*.json; do jq -c '. + {target: "b"}' "$f"; done)
  done < "$WORK/results/$label/order"
  local lone=$WORK/results/$label/lone-remove.json
  if [[ -f $lone ]]; then
    jq -r '"\nBulk remove of 100 members sent one at a time: p50 \(.latency_ms.p50 * 100 | round / 100) ms, p99 \(.latency_ms.p99 * 100 | round / 100) ms, max \(.latency_ms.max * 100 | round / 100) ms (\(.ok) requests, \(.errors) errors)."' "$lone"
  fi
  printf 'Gatehouse ready %s ms after exec; resident memory after the runs %s MiB (peak %s MiB).\n' \
    "${STARTUP[$label]}" "${RSS_NOW[$label]}" "${RSS_PEAK[$label]}"
  [[ -n ${SEEDED[$label]:-} ]] && printf 'Seeding took %s s.\n' "${SEEDED[$label]}"
  return 0
}

declare -A STARTUP RSS_NOW RSS_PEAK SEEDED

# run_set LABEL SEED-ARGS...: a fresh database, seeded, then the scenarios.
run_set() {
  local label=$1 db
  shift
  local scenarios=("${SET_SCENARIOS[@]}")
  mkdir -p "$WORK/results/$label"
  : > "$WORK/results/$label/order"
  db=$(new_database "$label")
  [[ $ENGINE == postgres ]] && DATABASES+=("$db")
  seed "$db" "$WORK/$label.manifest.json" "$@"
  SEEDED[$label]=$SEED_SECONDS
  REQ=$WORK/requests/$label
  make_requests "$WORK/$label.manifest.json" "$REQ"
  start_gatehouse "$db"
  STARTUP[$label]=$STARTUP_MS
  local s
  for s in "${scenarios[@]}"; do
    run_scenario "$label" "$s"
  done
  lone_bulk_remove "$label"
  read -r RSS_NOW[$label] RSS_PEAK[$label] < <(rss "$GH_PID")
  stop "$GH_PID"
}

SET_SCENARIOS=(get-key get-key-by-hash get-guardrail list-guardrails patch-key create-key
  bulk-remove-100-members bulk-assign-100-keys chat-completions)
# Workspaces of 100 members: one per bulk-remove request of a run.
run_set small --keys 20000 --guardrails 2000 --members 1000 --workspaces "${BENCH_WORKSPACES:-3001}" --workspace-members 100
LABELS=(small)
if ((SCALE)); then
  SET_SCENARIOS=(get-key get-key-by-hash get-guardrail list-guardrails bulk-remove-100-members)
  run_set scale --keys 1000000 --guardrails 100000 --members 100000 --workspaces 10000 --workspace-members 100
  LABELS+=(scale)
fi

{
  printf '## Gatehouse benchmarks: %s, %s\n' "$ENGINE" "$(date -u +%Y-%m-%dT%H:%MZ)"
  printf '\nMachine: %s cores, %s, %s MiB of memory. Go %s.\n' "$(nproc)" \
    "$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)" "$(awk '/^MemTotal/ {printf "%d", $2 / 1024}' /proc/meminfo)" \
    "$(go env GOVERSION)"
  for label in "${LABELS[@]}"; do table "$label"; done
} | tee "${BENCH_OUT:-/dev/null}"
