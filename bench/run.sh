#!/usr/bin/env bash
# Gatehouse load benchmarks: bash bench/run.sh [sqlite|postgres] [--scale]
#
# Builds the binaries, starts Gatehouse on a fresh database (PostgreSQL: a
# new database on the server of GATEHOUSE_TEST_POSTGRES_URL, dropped at the
# end), seeds it with `gatehouse bench-seed`, and runs every scenario: for
# each, BENCH_RUNS runs against Gatehouse and as many against a baseline
# server answering the same bytes (bench/baseline), interleaved, each run
# with its own warm-up; chat completions are measured against fakellm
# alone and behind a bare reverse proxy (bench/baseline -proxy). The load
# generator is wrk, driven by bench/wrk/requests.lua (bench/loadgen only
# waits for servers, records answers and puts members back). Prints one
# table. --scale then does it again for the read scenarios and bulk remove
# on a database of 1,000,000 keys, 100,000 guardrails, 100,000 members and
# 10,000 workspaces, and reports start-up time, resident memory and the
# latency of a lone bulk remove.
#
# Settings (environment): BENCH_CONCURRENCY (32), BENCH_DURATION (5s),
# BENCH_WARMUP (1s), BENCH_RUNS (3), BENCH_LOG_LEVEL (info: one log line
# per request, as in production), BENCH_PG_POOL (PostgreSQL: the server's
# pool_max_conns), BENCH_SCENARIOS (a regular expression over scenario
# names; default all), BENCH_WRK_THREADS (2: wrk -t; the concurrency
# should be a multiple of it), BENCH_DESTINATIONS (0: with N, the regular
# key's workspace gets N observability destinations at sampling 1.0 -- a
# webhook, an otel-collector, a langfuse, over again -- all delivering to a
# local sink, bench/baseline answering 200), BENCH_IO_LOGGING (0: with 1,
# that workspace logs I/O, so each event carries the prompt and completion
# and each call's content is sealed and stored). Needs go, jq and wrk
# (apt-get install wrk).
set -euo pipefail

ENGINE=sqlite
SCALE=0
for arg in "$@"; do
  case "$arg" in
    sqlite | postgres) ENGINE=$arg ;;
    --scale) SCALE=1 ;;
    -h | --help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: bash bench/run.sh [sqlite|postgres] [--scale]" >&2; exit 2 ;;
  esac
done
CONC=${BENCH_CONCURRENCY:-32}
DUR=${BENCH_DURATION:-5s}
WARM=${BENCH_WARMUP:-1s}
RUNS=${BENCH_RUNS:-3}
ONLY=${BENCH_SCENARIOS:-.}
WRK_THREADS=${BENCH_WRK_THREADS:-2}
command -v jq > /dev/null || { echo "bench/run.sh needs jq" >&2; exit 1; }
command -v wrk > /dev/null || {
  echo "bench/run.sh needs wrk, its load generator: apt-get install wrk (Debian, Ubuntu)," >&2
  echo "  brew install wrk (macOS), or build https://github.com/wg/wrk" >&2
  exit 1
}
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
  GATEHOUSE_LOG_LEVEL="${BENCH_LOG_LEVEL:-info}" GATEHOUSE_LOG_FORMAT=json GATEHOUSE_PROVIDERS_FILE="$WORK/providers.yaml"
  GATEHOUSE_EGRESS_ALLOW=127.0.0.0/8)

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

# add_destinations N gives the regular key's workspace N destinations at
# sampling 1.0 (webhook, otel-collector, langfuse, in turn), all pointed at a
# sink answering 200.
add_destinations() {
  local n=$1 i ws port sink body
  ((n > 0)) || return 0
  port=$(free_port)
  : > "$WORK/sink.json" # an empty 200: what OTLP receivers answer too
  "$BIN/baseline" -addr "127.0.0.1:$port" -response-file "$WORK/sink.json" -status 200 > "$WORK/sink.log" 2>&1 &
  PIDS+=("$!")
  sink=http://127.0.0.1:$port
  "$BIN/loadgen" -wait -url "$sink/" -timeout 30s > /dev/null
  ws=$(curl -sf "$GH/api/v1/key" -H "Authorization: Bearer $REGULAR_KEY" | jq -r .data.workspace_id)
  for ((i = 0; i < n; i++)); do
    case $((i % 3)) in
      0) body='{"type": "webhook", "config": {"url": "'$sink'/hook"}}' ;;
      1) body='{"type": "otel-collector", "config": {"endpoint": "'$sink'/otel"}}' ;;
      2) body='{"type": "langfuse", "config": {"baseUrl": "'$sink'/lf", "publicKey": "pk-bench", "secretKey": "sk-bench-0123456789"}}' ;;
    esac
    body=$(jq -c --arg ws "$ws" --arg name "bench-$i" '. + {workspace_id: $ws, name: $name, sampling_rate: 1}' <<< "$body")
    curl -sf -X POST "$GH/api/v1/observability/destinations" -H "Authorization: Bearer $MGMT" \
      -H 'Content-Type: application/json' -d "$body" > /dev/null || { echo "cannot create destination $i" >&2; return 1; }
  done
  log "$n destinations in workspace $ws, delivering to the sink at $sink"
  if [[ ${BENCH_IO_LOGGING:-0} == 1 ]]; then
    curl -sf -X PATCH "$GH/api/v1/workspaces/$ws" -H "Authorization: Bearer $MGMT" -H 'Content-Type: application/json' \
      -d '{"is_observability_io_logging_enabled": true}' > /dev/null || { echo "cannot turn on I/O logging" >&2; return 1; }
    log "workspace $ws logs I/O: the events carry the text, and the calls' content is stored"
  fi
}

# report_destinations logs what the destinations delivered (a second after
# the load, for the counts to be written).
report_destinations() {
  ((${BENCH_DESTINATIONS:-0} > 0)) || return 0
  sleep 1
  log "destinations: $(curl -sf "$GH/api/v1/observability/destinations?limit=100&workspace_id=$(curl -sf "$GH/api/v1/key" \
    -H "Authorization: Bearer $REGULAR_KEY" | jq -r .data.workspace_id)" -H "Authorization: Bearer $MGMT" |
    jq -c '[.data[] | {type, sent: .delivery.sent, failed: .delivery.failed, dropped: .delivery.dropped, last_error: .delivery.last_error}]')"
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
# The ceiling of a gateway in front of it: a bare reverse proxy.
PROXY_PORT=$(free_port)
"$BIN/baseline" -addr "127.0.0.1:$PROXY_PORT" -proxy "$LLM" 2> "$WORK/proxy.log" &
PIDS+=($!)
PROXY=http://127.0.0.1:$PROXY_PORT
"$BIN/loadgen" -wait -url "$PROXY/healthz" -timeout 30s > /dev/null || { cat "$WORK/proxy.log" >&2; exit 1; }

CHAT_BODY='{"model": "fake/echo", "messages": [{"role": "user", "content": "Hello, gateway! How are you today?"}]}'

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
  # The requests of each scenario, for bench/wrk/requests.lua: METHOD PATH
  # [BODY] a line, {{.N}} the sequence number.
  echo 'GET /api/v1/key' > "$d/get-key"
  sed 's|^|GET |' "$d/keys.paths" > "$d/get-key-by-hash"
  sed 's|^|GET |' "$d/guardrails.paths" > "$d/get-guardrail"
  echo 'GET /api/v1/guardrails?limit=100' > "$d/list-guardrails"
  sed 's|^|PATCH |; s|$| {"name": "bench-{{.N}}"}|' "$d/keys.paths" > "$d/patch-key"
  echo 'POST /api/v1/keys {"name": "bench-new-{{.N}}"}' > "$d/create-key"
  jq -r '"\(.method) \(.path) \(.body | tojson)"' "$d/remove.jsonl" > "$d/bulk-remove-100-members"
  jq -r '"\(.method) \(.path) \(.body | tojson)"' "$d/assign.jsonl" > "$d/bulk-assign-100-keys"
  echo "POST /api/v1/chat/completions $CHAT_BODY" | tee "$d/chat-completions" > "$d/chat-completions-1"
  # What fakellm is sent, directly or through the bare proxy.
  echo "POST /v1/chat/completions ${CHAT_BODY/fake\/echo/echo}" > "$d/chat-upstream"
}

# scenario_header NAME prints the Authorization header of a scenario.
scenario_header() {
  case $1 in
    get-key | chat-completions*) echo "Authorization: Bearer $REGULAR_KEY" ;;
    *) echo "Authorization: Bearer $MGMT" ;;
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

# record FILE HEADER OUT: sends the first request of a requests file to
# Gatehouse ({{.N}} as 0), saves the answer's body to OUT for the baseline
# and prints its status and content type as JSON.
record() {
  local method path body args
  read -r method path body < "$1"
  args=(-path "$path" -method "$method" -header "$2" -record "$3")
  [[ -n $body ]] && args+=(-body "$body")
  loadgen "$GH" "${args[@]}"
}

# wrk_run BASE FILE HEADER CONNECTIONS DURATION START [once]: one run of wrk
# with bench/wrk/requests.lua, from request number START; prints the JSON
# line of its results.
wrk_run() {
  local base=$1 file=$2 header=$3 conns=$4 dur=$5 start=$6 once=${7:-} t=$WRK_THREADS out=${WRK_OUT:-$WORK/wrk.out}
  ((conns < t)) && t=$conns
  local args=(-t "$t" -c "$conns" -d "$dur" --timeout 30s -s "$ROOT/bench/wrk/requests.lua")
  [[ -n $header ]] && args+=(-H "$header")
  wrk "${args[@]}" "$base" -- "$file" "$t" "$start" ${once:+"$once"} > "$out" 2>&1 || { cat "$out" >&2; return 1; }
  grep '^{' "$out" | tail -n 1 | grep . || { cat "$out" >&2; return 1; }
}

# measure BASE FILE HEADER CONNECTIONS WARMUP START [once]: a warm-up run
# (its results dropped), then the measured run going on from where the
# warm-up stopped, as one client would; sets NEXT to the number of its
# first request.
measure() {
  NEXT=$6
  if [[ $5 != 0 && $5 != 0s ]]; then
    local warmup=${WRK_OUT:-$WORK/wrk.out}.warmup.json
    wrk_run "$1" "$2" "$3" "$4" "$5" "$NEXT" > "$warmup"
    NEXT=$((NEXT + $(jq .sent "$warmup")))
  fi
  wrk_run "$1" "$2" "$3" "$4" "$DUR" "$NEXT" ${7:+"$7"}
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

# used RESULT: counts the remove requests a run may have sent: up to the
# highest line of the requests file that wrk sent (answered or in flight).
used() { USED=$((USED + $(jq .lines_used "$1"))); }

# run_scenario LABEL NAME: runs and records one scenario into $RESULTS.
run_scenario() {
  local label=$1 name=$2 dir=$WORK/results/$1/$2 meta base_pid= base_port
  [[ $name =~ $ONLY ]] || return 0
  mkdir -p "$dir"
  local file=$REQ/$name header conc=$CONC warm=$WARM once=
  header=$(scenario_header "$name")
  [[ $name == chat-completions-1 ]] && conc=1
  # Each workspace's members are removed once, so a run warms up on none:
  # the warm-up would use up the requests.
  [[ $name == bulk-remove-100-members ]] && once=once warm=0
  meta=$(record "$file" "$header" "$dir/response") || { log "$name: could not record a response"; return 1; }
  [[ -n $once ]] && USED=1
  # The baselines, each with the requests and header it is sent: the
  # recorded bytes of one real answer, or for chat completions fakellm
  # alone and the bare proxy in front of it.
  local kinds=(recorded) base_file=$file base_header=$header
  local -A url=()
  if [[ $name == chat-completions* ]]; then
    kinds=(fakellm proxy) url[fakellm]=$LLM url[proxy]=$PROXY base_file=$REQ/chat-upstream base_header=
  else
    base_port=$(free_port)
    "$BIN/baseline" -addr "127.0.0.1:$base_port" -response-file "$dir/response" -status "$(jq .status <<< "$meta")" \
      -content-type "$(jq -r .content_type <<< "$meta")" 2> "$dir/baseline.log" &
    base_pid=$!
    PIDS+=("$base_pid")
    url[recorded]=http://127.0.0.1:$base_port
    "$BIN/loadgen" -wait -url "${url[recorded]}/healthz" -timeout 30s > /dev/null || { cat "$dir/baseline.log" >&2; return 1; }
  fi
  printf '%s\n' "${kinds[@]}" > "$dir/baselines"
  log "$label $name: response $(jq -c . <<< "$meta")"
  # Each run goes on with the requests where the previous one stopped (the
  # recorded answer was request 0), so that a scenario whose requests undo
  # each other (bulk assign moves keys to one guardrail, then back) does
  # not replay the same ones; one whose requests are used once starts
  # over after its refill.
  local r k line next=1
  for ((r = 1; r <= RUNS; r++)); do
    [[ -n $once ]] && refill && next=0
    measure "$GH" "$file" "$header" "$conc" "$warm" "$next" ${once:+"$once"} > "$dir/gatehouse.$r.json"
    next=$((NEXT + $(jq .sent "$dir/gatehouse.$r.json")))
    [[ -n $once ]] && used "$dir/gatehouse.$r.json"
    line="  run $r: gatehouse $(jq -r '"\(.rps | floor)/s p50 \(.latency_ms.p50)ms p99 \(.latency_ms.p99)ms errors \(.errors)"' "$dir/gatehouse.$r.json")"
    # The baselines rotate where Gatehouse uses each request once: they
    # change nothing, and would run out in a moment.
    for k in "${kinds[@]}"; do
      measure "${url[$k]}" "$base_file" "$base_header" "$conc" "$WARM" 0 > "$dir/baseline-$k.$r.json"
      line+=", $k $(jq -r '"\(.rps | floor)/s p50 \(.latency_ms.p50)ms"' "$dir/baseline-$k.$r.json")"
    done
    log "$line"
  done
  [[ -n $base_pid ]] && stop "$base_pid"
  : > "$WORK/gatehouse.log" # the request log of a scenario is not kept
  echo "$name" >> "$WORK/results/$label/order"
}

# two_instances LABEL DB (PostgreSQL): chat completions on one hot key
# through two Gatehouse instances on the same database, each sent half the
# clients by a wrk of its own, both at once; the figure is their sum (p50
# the mean of the two, p99 the larger), against the bare proxy at all the
# clients.
two_instances() {
  local label=$1 db=$2 name=chat-completions-2-instances
  [[ $ENGINE == postgres && $name =~ $ONLY ]] || return 0
  local dir=$WORK/results/$label/$name first=$GH first_pid=$GH_PID second second_pid r a b
  mkdir -p "$dir"
  start_gatehouse "$db"
  second=$GH second_pid=$GH_PID GH=$first GH_PID=$first_pid
  local half=$((CONC / 2)) header
  header=$(scenario_header chat-completions)
  echo proxy > "$dir/baselines"
  for ((r = 1; r <= RUNS; r++)); do
    WRK_THREADS=1 WRK_OUT=$dir/a.out measure "$first" "$REQ/chat-completions" "$header" "$half" "$WARM" 0 > "$dir/a.$r.json" &
    a=$!
    WRK_THREADS=1 WRK_OUT=$dir/b.out measure "$second" "$REQ/chat-completions" "$header" "$half" "$WARM" 0 > "$dir/b.$r.json" &
    b=$!
    wait "$a" "$b"
    jq -s '{rps: (.[0].rps + .[1].rps), errors: (.[0].errors + .[1].errors), sent: (.[0].sent + .[1].sent),
      latency_ms: {p50: ((.[0].latency_ms.p50 + .[1].latency_ms.p50) / 2), p99: ([.[0].latency_ms.p99, .[1].latency_ms.p99] | max)}}' \
      "$dir/a.$r.json" "$dir/b.$r.json" > "$dir/gatehouse.$r.json"
    measure "$PROXY" "$REQ/chat-upstream" "" "$CONC" "$WARM" 0 > "$dir/baseline-proxy.$r.json"
    log "  run $r: two instances $(jq -r '"\(.rps | floor)/s (\(.errors) errors)"' "$dir/gatehouse.$r.json"), proxy $(jq -r '"\(.rps | floor)/s"' "$dir/baseline-proxy.$r.json")"
  done
  stop "$second_pid"
  echo "$name" >> "$WORK/results/$label/order"
}

# lone_bulk_remove LABEL: the latency of bulk removes sent one at a time.
lone_bulk_remove() {
  [[ bulk-remove-100-members =~ $ONLY ]] || return 0
  refill
  wrk_run "$GH" "$REQ/bulk-remove-100-members" "Authorization: Bearer $MGMT" 1 3s 0 once > "$WORK/results/$1/lone-remove.json"
  used "$WORK/results/$1/lone-remove.json"
}

# row NAME BASELINE DIR: the table's row of a scenario against one of its
# baselines.
row() {
  local name=$1 kind=$2 dir=$3 label=$1
  case $kind in
    fakellm) label="$name vs fakellm alone" ;;
    proxy) label="$name vs bare proxy" ;;
  esac
  jq -s -r --arg name "$label" '
    def med: sort | .[length / 2 | floor];
    def fmt: if . >= 100 then floor | tostring else (. * 10 | floor) / 10 | tostring end;
    (map(select(.target == "g"))) as $g | (map(select(.target == "b"))) as $b |
    ($g | map(.rps)) as $gr | ($b | map(.rps)) as $br |
    "| \($name) | \($gr | med | fmt) [\($gr | min | fmt)–\($gr | max | fmt)] | " +
    "\($g | map(.latency_ms.p50) | med * 100 | round / 100) | \($g | map(.latency_ms.p99) | med * 100 | round / 100) | " +
    "\($g | map(.errors) | add) | \($br | med | fmt) [\($br | min | fmt)–\($br | max | fmt)] | " +
    "\(if ($br | med) > 0 then ($gr | med) / ($br | med) | (if . < 0.1 then . * 1000 | round / 1000 else . * 100 | round / 100 end) else "n/a" end) |"' \
    <(for f in "$dir"/gatehouse.*.json; do jq -c '. + {target: "g"}' "$f"; done
      for f in "$dir"/baseline-"$kind".*.json; do jq -c '. + {target: "b"}' "$f"; done)
}

# added_latency DIR: what Gatehouse adds to the bare proxy's median p50.
added_latency() {
  jq -s -r '
    def med: sort | .[length / 2 | floor];
    def p50(t): map(select(.target == t) | .latency_ms.p50) | med;
    (p50("g")) as $g | (p50("proxy")) as $p | (p50("fakellm")) as $f |
    "\nAt 1 client (chat-completions-1), Gatehouse adds \(($g - $p) * 1000 | round) µs to the median p50 of the bare proxy " +
    "(Gatehouse \($g) ms, bare proxy \($p) ms, fakellm alone \($f) ms)."' \
    <(for f in "$1"/gatehouse.*.json; do jq -c '. + {target: "g"}' "$f"; done
      for f in "$1"/baseline-proxy.*.json; do jq -c '. + {target: "proxy"}' "$f"; done
      for f in "$1"/baseline-fakellm.*.json; do jq -c '. + {target: "fakellm"}' "$f"; done)
}

# table LABEL: prints the table of one set of results.
table() {
  local label=$1 name kind dir
  printf '\n### %s (%s, %s clients unless named -1, %s runs of %s, wrk -t%s)\n\n' "$label" "$ENGINE" "$CONC" "$RUNS" "$DUR" "$WRK_THREADS"
  echo '| scenario | gatehouse req/s: median [min–max] | p50 ms | p99 ms | errors | baseline req/s: median [min–max] | ratio |'
  echo '|---|---|---|---|---|---|---|'
  while read -r name; do
    dir=$WORK/results/$label/$name
    while read -r kind; do row "$name" "$kind" "$dir"; done < "$dir/baselines"
  done < "$WORK/results/$label/order"
  [[ -f $WORK/results/$label/chat-completions-1/baselines ]] && added_latency "$WORK/results/$label/chat-completions-1"
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
  add_destinations "${BENCH_DESTINATIONS:-0}"
  local s
  for s in "${scenarios[@]}"; do
    run_scenario "$label" "$s"
  done
  report_destinations
  lone_bulk_remove "$label"
  two_instances "$label" "$db"
  read -r RSS_NOW[$label] RSS_PEAK[$label] < <(rss "$GH_PID")
  stop "$GH_PID"
}

SET_SCENARIOS=(get-key get-key-by-hash get-guardrail list-guardrails patch-key create-key
  bulk-remove-100-members bulk-assign-100-keys chat-completions chat-completions-1)
# (and on PostgreSQL, chat-completions-2-instances: two_instances)
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
  printf 'Load generator: %s, %s threads.\n' "$(wrk -v 2>&1 | head -n 1 | cut -d ' ' -f 1-2 || true)" "$WRK_THREADS"
  for label in "${LABELS[@]}"; do table "$label"; done
} | tee "${BENCH_OUT:-/dev/null}"
