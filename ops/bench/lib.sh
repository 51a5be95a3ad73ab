# Shell functions shared by the ops/bench benchmarks. Each script sources it right after its
# header comment and `set -euo pipefail`:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   show_help "$@"
#
# Sourcing only defines functions and variables; nothing is built, started or created until a
# script calls them. Globals the functions set or read:
#   ROOT, BENCH_DIR, LUA_DIR   the repository, ops/bench and ops/bench/lua
#   WRK_THREADS, WRK_CONNECTIONS  wrk -t2 -c64, as every benchmark runs it
#   WORK                       the temporary folder (make_workdir)
#   PIDS                       every process started by spawn and not stopped yet
#   TRASH                      paths outside WORK that are always removed on exit
#   FAILED                     1 once a check failed (fail); finish exits 1 then
#   INGEST, WORKER             the herald binaries (build_release)
#   HTTP_URL                   herald-ingest's URL in the config written last (write_config)
#   INGEST_PID, WORKER_PIDS    the running herald processes (start_ingest, start_workers)
#   DB_URL                     when set, write_config points herald at this PostgreSQL database
#                              (database.url) instead of a SQLite file
#   SYNCHRONOUS                database.synchronous of the SQLite file (full by default); not
#                              written with DB_URL (SQLite only)
#   PG_DIR, PG_PORT            the private PostgreSQL server (start_postgres)
#   BENCH_RESULTS              when set, the file `record` appends each measured ratio to (ops/bench/all)
#   scripts set APP and DURATION (run_wrk), NGINX (start_nginx) and TIMEOUT (check_funnel)

BENCH_NAME=$(basename "$0")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH_DIR="$ROOT/ops/bench"
LUA_DIR="$BENCH_DIR/lua"
WRK_THREADS=2
WRK_CONNECTIONS=64
WORK=""
PIDS=()
TRASH=()
FAILED=0

# --- script frame -----------------------------------------------------------------------

# show_help args: with -h or --help first, print the script's header comment and exit 0
show_help() {
    case "${1:-}" in
        -h | --help)
            awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
            exit 0
            ;;
    esac
}

# die message: print it after the script's name and exit 1
die() {
    echo "$BENCH_NAME: $*" >&2
    exit 1
}

# fail message: print it as a failure and carry on; the script exits 1 at finish
fail() {
    echo "$BENCH_NAME: FAIL: $*" >&2
    FAILED=1
}

# finish: exit 1 when a check failed (call it after the tables are out)
finish() {
    if [[ $FAILED -ne 0 ]]; then
        echo "$BENCH_NAME: FAILED (see messages above)" >&2
        exit 1
    fi
}

# need tool...: die naming the first one that is not installed
need() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 ||
            die "needs $tool (ops/install-deps --bench; apt-get install wrk nginx nghttp2-server nghttp2-client)"
    done
}

# require_int VAR...: die unless each variable holds one positive integer
require_int() {
    local v
    for v in "$@"; do
        [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
    done
}

# require_ints VAR...: die unless each variable holds space-separated positive integers
require_ints() {
    local v n
    for v in "$@"; do
        for n in ${!v}; do
            [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "$v must be positive integers, got '${!v}'"
        done
    done
}

# build_release bin_dir program...: cd ROOT, build unless NO_BUILD=1, check the programs; sets INGEST, WORKER
build_release() {
    local dir=$1 program
    shift
    cd "$ROOT"
    if [[ "${NO_BUILD:-0}" != 1 ]]; then
        echo "== swift build -c release" >&2
        swift build -c release >&2
    fi
    for program in "$@"; do
        [[ -x "$dir/$program" ]] || die "$program not found in $dir (build with: swift build -c release)"
    done
    INGEST="$dir/herald-ingest"
    WORKER="$dir/herald-worker"
}

# make_workdir prefix: WORK=$(mktemp -d) under TMPDIR; cleanup runs on exit, INT and TERM
make_workdir() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# cleanup (on exit): stop PIDS (newest first), remove TRASH, and WORK unless KEEP=1 or the exit status is not 0
cleanup() {
    local status=$? i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop "${PIDS[$i]}"; done
    stop_postgres
    ((${#TRASH[@]} == 0)) || rm -rf "${TRASH[@]}"
    if [[ $status -ne 0 || "${KEEP:-0}" == 1 ]]; then
        echo "$BENCH_NAME: logs, configs and databases kept in $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}

# benchlib subcommand args...: ops/bench/benchlib.py (see its --help)
benchlib() {
    python3 "$BENCH_DIR/benchlib.py" "$@"
}

# --- processes --------------------------------------------------------------------------

# spawn out err command...: command in the background into out and err (may be one); sets SPAWNED, adds to PIDS
spawn() {
    local out=$1 err=$2
    shift 2
    if [[ "$out" == "$err" ]]; then
        "$@" >>"$out" 2>&1 &
    else
        "$@" >>"$out" 2>>"$err" &
    fi
    SPAWNED=$!
    PIDS+=("$SPAWNED")
}

# stop pid [signal]: send signal (default TERM), wait up to 10 s, then KILL; drops it from PIDS
stop() {
    local pid=$1 signal=${2:-TERM} i kept=() p
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill -"$signal" "$pid" 2>/dev/null || true
        for i in $(seq 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    for p in "${PIDS[@]}"; do [[ "$p" == "$pid" ]] || kept+=("$p"); done
    PIDS=("${kept[@]}")
}

# wait_for name pid log tries command...: retry command every 0.1 s; die showing log if pid exits or tries run out
wait_for() {
    local name=$1 pid=$2 log=$3 tries=$4 i
    shift 4
    for i in $(seq "$tries"); do
        "$@" && return 0
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2 || true; die "$name exited during startup"; }
        sleep 0.1
    done
    cat "$log" >&2 || true
    die "$name not ready after $((tries / 10)) s ($*)"
}

# http_ok url: true when it answers HTTP 200
http_ok() {
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "$1" || true)" == 200 ]]
}

# tcp_open port: true when 127.0.0.1:port accepts a connection
tcp_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_ports n: print n distinct free loopback ports
free_ports() {
    benchlib ports "$1"
}

# start_nginx port [envelope [folder]]: a private $NGINX answering 200 "ok" to all on 127.0.0.1:port,
# files in WORK/folder (default WORK/nginx); sets NGINX_PID. With "envelope", the fixed 200 carries the Pushwoosh envelope
# {"status_code":200,...} (and /onesignal/ the helper's {"status":1,"player_id":...}) as JSON.
start_nginx() {
    local port=$1 mode=${2:-} dir="$WORK/${3:-nginx}" answer
    answer='default_type text/plain;
            return 200 "ok";'
    if [[ "$mode" == envelope ]]; then
        answer="default_type application/json;
            return 200 '{\"status_code\":200,\"status_message\":\"OK\",\"response\":null}';
        }
        location /onesignal/ {
            default_type application/json;
            return 200 '{\"status\":1,\"success\":true,\"player_id\":\"0f8fad5b-d9cb-469f-a165-70867728950e\"}';"
    fi
    mkdir -p "$dir/tmp"
    cat >"$dir/nginx.conf" <<EOF
worker_processes 2;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    # nginx closes a keep-alive connection after 1000 requests by default; herald does
    # not, so lift the cap to keep both on the same long-lived connections.
    keepalive_requests 100000000;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        location / {
            $answer
        }
    }
}
EOF
    spawn "$dir/stdout.log" "$dir/stdout.log" "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
    NGINX_PID=$SPAWNED
    wait_for nginx "$NGINX_PID" "$dir/error.log" 100 http_ok "http://127.0.0.1:$port/"
}

# --- PostgreSQL -------------------------------------------------------------------------

# start_postgres: a private PostgreSQL server in WORK/pg on a free port of 127.0.0.1 (socket in
# that folder, fsync on, run as the postgres user when this is root); stopped on exit. Sets
# PG_DIR, PG_PORT, PG_BIN. pg_url database: the URL of a database on it (user herald, trust).
start_postgres() {
    PG_BIN=${HERALD_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
    [[ -x "$PG_BIN/initdb" ]] || die "needs PostgreSQL (ops/install-deps --test installs it)"
    PG_DIR="$WORK/pg"
    read -r PG_PORT < <(free_ports 1)
    mkdir -p "$PG_DIR"
    chmod 700 "$PG_DIR"
    if [[ $(id -u) -eq 0 ]]; then
        chown postgres: "$PG_DIR"
        chmod o+x "$WORK" # the postgres user passes through, without listing it
    fi
    echo "== PostgreSQL on 127.0.0.1:$PG_PORT" >&2
    as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -U herald -E UTF8 --locale=C --no-sync >"$WORK/pg-initdb.log" 2>&1 ||
        { cat "$WORK/pg-initdb.log" >&2; die "initdb failed"; }
    as_pg "$PG_BIN/pg_ctl" start -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
        -o "-k $PG_DIR -c listen_addresses=127.0.0.1 -p $PG_PORT -c fsync=on -c max_connections=200 -c shared_buffers=512MB" \
        >/dev/null || { cat "$PG_DIR/server.log" >&2; die "PostgreSQL did not start"; }
    PG_STARTED=1
}

# as_pg command...: the command as the postgres user when this is root
as_pg() {
    if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# stop_postgres: stop the server of start_postgres (fast shutdown, 60 s at most)
stop_postgres() {
    [[ "${PG_STARTED:-0}" == 1 ]] || return 0
    as_pg "$PG_BIN/pg_ctl" stop -D "$PG_DIR/data" -m fast -w -t 60 >/dev/null 2>&1 || true
    PG_STARTED=0
}

# pg_url database: its URL on the server of start_postgres
pg_url() {
    echo "postgresql://herald@127.0.0.1:$PG_PORT/$1"
}

# psql_run sql...: run SQL on the database postgres of that server
psql_run() {
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_DIR" -p "$PG_PORT" -U herald -d postgres "$@" >/dev/null
}

# --- herald -----------------------------------------------------------------------------

# sink_apps code name token: the "apps" JSON of one app delivering into sink.jsonl
sink_apps() {
    printf '[{"code": "%s", "name": "%s", "api_token": "%s", "sink": "sink.jsonl"}]' "$1" "$2" "$3"
}

# omit_synchronous dir: drops database.synchronous from dir/config.json, for a reference build older
# than the key (it refuses the key, and runs synchronous normal)
omit_synchronous() {
    python3 - "$1/config.json" <<'EOF'
import json, sys
config = json.load(open(sys.argv[1]))
config["database"].pop("synchronous", None)
json.dump(config, open(sys.argv[1], "w"))
EOF
}

# write_config dir apps [http_extra] [extra]: dir/config.json on fresh ports, database in dir/data
# (or DB_URL when set), log_level LOG_LEVEL (default WARNING); sets HTTP_URL
write_config() {
    local dir=$1 apps=$2 http_extra=${3:-} extra=${4:-} http jobs results database="{\"path\": \"data/herald.sqlite\", \"synchronous\": \"${SYNCHRONOUS:-full}\"${CACHE_MB:+, \"cache_mb\": $CACHE_MB}}"
    read -r http jobs results < <(free_ports 3)
    mkdir -p "$dir/data"
    [[ -z "${DB_URL:-}" ]] || database="{\"url\": \"$DB_URL\"}"
    cat >"$dir/config.json" <<EOF
{
  "log_level": "${LOG_LEVEL:-WARNING}",
  "http": {"listen": "127.0.0.1:$http"$http_extra},
  "database": $database,
  "queue": {"jobs": "tcp://127.0.0.1:$jobs", "results": "tcp://127.0.0.1:$results"},
  $extra
  "apps": $apps
}
EOF
    HTTP_URL="http://127.0.0.1:$http"
}

# start_ingest dir [tries of 0.1 s, default 100]: herald-ingest on dir/config.json, up on /healthz; sets INGEST_PID
start_ingest() {
    local dir=$1 tries=${2:-100}
    spawn "$dir/ingest.stdout.log" "$dir/ingest.log" "$INGEST" --config "$dir/config.json"
    INGEST_PID=$SPAWNED
    wait_for herald-ingest "$INGEST_PID" "$dir/ingest.log" "$tries" http_ok "$HTTP_URL/healthz"
}

# start_workers dir n: n herald-worker processes on dir/config.json (logs dir/worker-<i>.log); sets WORKER_PIDS
start_workers() {
    local dir=$1 n=$2 i
    WORKER_PIDS=()
    for i in $(seq "$n"); do
        spawn "$dir/worker-$i.stdout.log" "$dir/worker-$i.log" "$WORKER" --config "$dir/config.json"
        WORKER_PIDS+=("$SPAWNED")
    done
}

# metric name: its value on HTTP_URL/metrics (empty when missing)
metric() {
    { curl -s "$HTTP_URL/metrics" || true; } | awk -v n="$1" '$1 == n { print $2 }'
}

# screen_opens token: the PW_ScreenOpen reports of APP that the events API on HTTP_URL counts over
# all time; fails, saying why on stderr, when it gives no count
screen_opens() {
    local answer
    answer=$(curl -s --max-time 120 -H "Authorization: Token $1" "$HTTP_URL/api/v1/apps/$APP/events?from=0&to=4102444800") ||
        { echo "events API request failed" >&2; return 1; }
    benchlib count "$APP" PW_ScreenOpen <<<"$answer" || { echo "bad events API answer: ${answer:0:300}" >&2; return 1; }
}

# wait_workers dir n: until /metrics reports n workers connected (15 s), else die showing dir's logs
wait_workers() {
    local dir=$1 n=$2 connected="" i
    for i in $(seq 150); do
        connected=$(metric herald_workers_connected)
        [[ "$connected" == "$n" ]] && return 0
        sleep 0.1
    done
    log_problems "$dir"
    die "$n workers started, /metrics reports ${connected:-none} connected"
}

# start_run dir n seed_db: seed_db copied into dir/data, herald-ingest and n workers on dir/config.json, connected
start_run() {
    local dir=$1 n=$2 seed_db=$3
    cp "$seed_db" "$dir/data/herald.sqlite"
    start_ingest "$dir"
    start_workers "$dir" "$n"
    wait_workers "$dir" "$n"
}

# stop_herald: stop the workers, then herald-ingest
stop_herald() {
    local pid
    for pid in "${WORKER_PIDS[@]}"; do stop "$pid"; done
    stop "$INGEST_PID"
}

# log_problems dir: print the first lines of every dir/*.log that is not empty
log_problems() {
    local dir=$1 log
    for log in "$dir"/*.log; do
        [[ -s "$log" ]] || continue
        echo "  $(basename "$log"): $(wc -l <"$log") lines, first:" >&2
        head -n 3 "$log" | cut -c1-300 | sed 's/^/    /' >&2
    done
}

# report_logs dir what: when any dir/*.log has a line, say "<what> (log_level WARNING):" and show them
report_logs() {
    grep -qv '^$' "$1"/*.log 2>/dev/null || return 0
    echo "$BENCH_NAME: $2 (log_level WARNING):" >&2
    log_problems "$1"
}

# seed_devices dir script app count total [VAR=value...]: wrk registers devices until dir holds total; sets SEEDED_AT
seed_devices() {
    local dir=$1 script=$2 app=$3 count=$4 total=$5 seconds out got line wrk_pid
    shift 5
    seconds=$((count / 2000 + 120)) # generous: the count is what ends the seeding
    out="$dir/wrk-$app.out"
    echo "== seeding $count devices of $app through registerDevice (wrk -t$WRK_THREADS -c$WRK_CONNECTIONS)" >&2
    spawn "$out" "$out" env BENCH_LUA_DIR="$LUA_DIR" BENCH_APP="$app" BENCH_DEVICES="$count" \
        BENCH_WRK_THREADS="$WRK_THREADS" "$@" \
        wrk -t"$WRK_THREADS" -c"$WRK_CONNECTIONS" -d"${seconds}s" --timeout 10s -s "$LUA_DIR/$script" "$HTTP_URL"
    wrk_pid=$SPAWNED
    got=$(benchlib wait-devices "$dir/data/herald.sqlite" "$total" "$seconds") ||
        { cat "$out" >&2; log_problems "$dir"; die "seeding stalled at $got of $total devices"; }
    SEEDED_AT=$(date +%s.%N)
    stop "$wrk_pid" INT
    line=$(grep '^SEED ' "$out" || true)
    [[ -n "$line" ]] || { cat "$out" >&2; die "no SEED line from wrk"; }
    [[ "$line" == *" bad=0 "* ]] || { grep SEED "$out" >&2; die "registerDevice gave bad answers while seeding"; }
    ((got == total)) || die "seeded $got devices, expected exactly $total"
}

# finish_seeding dir: stop herald-ingest, show what it logged, checkpoint dir's database for copying
finish_seeding() {
    stop "$INGEST_PID"
    report_logs "$1" "herald-ingest logged while seeding"
    benchlib checkpoint "$1/data/herald.sqlite"
}

# check_funnel what result expected: WALL, SENT, FIRST, RATE of a campaign; fail unless done, all sent, none failed
check_funnel() {
    local what=$1 result=$2 expected=$3 status targeted failed throttled
    WALL=$(json_field "$result" wall)
    SENT=$(json_field "$result" funnel.sent)
    FIRST=$(json_field "$result" first_result_s)
    status=$(json_field "$result" funnel.status)
    targeted=$(json_field "$result" funnel.targeted)
    failed=$(json_field "$result" funnel.failed)
    throttled=$(json_field "$result" funnel.throttled)
    [[ "$status" == done ]] || fail "$what: message status '$status' after ${WALL:-?} s (TIMEOUT=$TIMEOUT)"
    [[ "$SENT" == "$expected" && "$targeted" == "$expected" && "$failed" == 0 && "$throttled" == 0 ]] ||
        fail "$what: funnel targeted=$targeted sent=${SENT:-?} failed=$failed throttled=$throttled, expected $expected sent"
    RATE=$(awk -v s="${SENT:-0}" -v w="${WALL:-0}" 'BEGIN { printf "%.0f", (w > 0 ? s / w : 0) }')
}

# --- wrk and figures --------------------------------------------------------------------

# run_wrk label script url expect: wrk for DURATION s with lua/script; sets LAST (BENCH line), LAST_LOG and
# LAST_MACHINE (the machine's busy, idle, iowait and steal shares meanwhile); bad answers fail
run_wrk() {
    local label=$1 script=$2 url=$3 expect=$4 bad socket http machine
    LAST_LOG="$WORK/wrk-$(tr -c 'A-Za-z0-9\n' '_' <<<"$label").log"
    echo "== $label ($script, ${DURATION}s)" >&2
    machine=$(benchlib machine)
    BENCH_LUA_DIR="$LUA_DIR" BENCH_EXPECT="$expect" BENCH_APP="$APP" BENCH_WRK_THREADS="$WRK_THREADS" \
        wrk -t"$WRK_THREADS" -c"$WRK_CONNECTIONS" -d"${DURATION}s" --latency \
        -s "$LUA_DIR/$script" "$url" >"$LAST_LOG" 2>&1 || { cat "$LAST_LOG" >&2; die "wrk failed for $label"; }
    LAST_MACHINE=$(benchlib machine-diff "$machine" "$(benchlib machine)")
    LAST=$(grep '^BENCH ' "$LAST_LOG" | tail -n 1) || { cat "$LAST_LOG" >&2; die "no BENCH line from wrk for $label"; }
    bad=$(field bad "$LAST")
    socket=$(field socket_errors "$LAST")
    http=$(field http_errors "$LAST")
    if [[ "$bad" != 0 || "$socket" != 0 || "$http" != 0 ]]; then
        fail "$label: $bad bad answers, $socket socket errors, $http HTTP errors"
        grep '^BENCH_SAMPLE ' "$LAST_LOG" >&2 || true
    fi
}

# field key line: the value of key=value in a line such as wrk's BENCH line
field() {
    sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<" $2"
}

# json_field json key: the value of a dotted key (a.b) in json, empty when missing
json_field() {
    benchlib field "$1" "$2"
}

# file_field file key: the same, in a JSON file (herald-load results outgrow a command argument)
file_field() {
    benchlib file-field "$1" "$2"
}

# ms microseconds: as milliseconds with two decimals and "ms"
ms() {
    awk -v us="$1" 'BEGIN { printf "%.2fms", us / 1000 }'
}

# record measure value floor: after a verdict, adds a row "bench, measure, value, floor, VERDICT"
# (tab-separated) to the file BENCH_RESULTS names, which ops/bench/all collects into its table;
# nothing when BENCH_RESULTS is unset
record() {
    [[ -n "${BENCH_RESULTS:-}" ]] || return 0
    printf '%s\t%s\t%s\t%s\t%s\n' "$BENCH_NAME" "$1" "$2" "$3" "$VERDICT" >>"$BENCH_RESULTS"
}

# verdict condition name=value...: VERDICT=PASS when the awk condition holds, else BELOW (FAILED=1 under STRICT=1)
verdict() {
    local condition=$1 vars=() a
    shift
    for a in "$@"; do vars+=(-v "$a"); done
    if awk "${vars[@]}" "BEGIN { exit !($condition) }"; then
        VERDICT=PASS
    else
        VERDICT=BELOW
        if [[ "${STRICT:-0}" == 1 ]]; then FAILED=1; fi
    fi
}
