#!/usr/bin/env bash
# instructions.sh counts the instructions the server process spends per
# request on a hot path, for the work tree and an earlier commit. Unlike
# requests/s it hardly moves with what else the machine is doing, so it shows
# a change of a few per cent that a busy machine hides. It runs each side as
# a separate server under valgrind's callgrind with instrumentation off, lets
# the bench's load run past setup and warm-up, counts only while the load
# runs, and divides by the requests the server's own metrics counted then.
#
#   bench/instructions.sh 9e32cc8                        # oauth-userinfo, SQLite
#   SCENARIO=oauth-refresh ENGINE=postgres bench/instructions.sh 9e32cc8
#
# Environment: SCENARIO (one bench scenario; default oauth-userinfo), ENGINE
# (sqlite or postgres), PG_URL and REDIS_URL as in compare.sh (databases
# hmid_ins_base and hmid_ins_head, Redis dbs 11 and 12), SETTLE (seconds of
# load before counting; 40), COUNT (seconds counted; 30), CONC (clients; 2:
# under valgrind, which runs one thread at a time, more only add waiting),
# TOGETHER (1: both sides at once; see below). Needs valgrind.
# The callgrind files stay in the printed directory for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/sides.sh

base_rev=${1:?usage: bench/instructions.sh BASE_COMMIT}
scenario=${SCENARIO:-oauth-userinfo}
engine=${ENGINE:-sqlite}
pg_url=${PG_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
redis_url=${REDIS_URL:-redis://127.0.0.1:6379}
settle=${SETTLE:-40}
count=${COUNT:-30}
conc=${CONC:-2}
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }

work=$(mktemp -d)
echo "building $base_rev and the work tree; files in $work"
trap 'git worktree remove --force "$work/src" 2>/dev/null || true' EXIT
build_sides "$base_rev"

# measure SIDE PORT REDIS_DB prints "SIDE requests instructions per-request".
measure() {
  local side=$1 port=$2 rdb=$3 db redis
  mkdir -p "$work/$side"
  side_store "$side" "hmid_ins_$side" "$rdb"
  # Asynchronous preemption signals confuse valgrind; the timeouts are
  # raised because everything runs tens of times slower under it.
  GODEBUG=asyncpreemptoff=1 HMID_ADDR=127.0.0.1:$port HMID_PUBLIC_URL=http://127.0.0.1:$port \
    HMID_DATABASE_URL=$db HMID_REDIS_URL=$redis HMID_SECRET_KEY=$secret HMID_SYSTEM_API_KEY=$key \
    HMID_TRUSTED_PROXIES=127.0.0.1/32 HMID_ACCESS_LOG=off HMID_LOG_LEVEL=error \
    HMID_REQUEST_TIMEOUT=120s HMID_READ_TIMEOUT=120s \
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/$side/callgrind.out" \
    "$work/hmid-$side" >"$work/$side/server.log" 2>&1 &
  local vpid=$!
  for _ in $(seq 1 300); do curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 1; done
  "$work/bench" -target "http://127.0.0.1:$port" -key "$key" -scenario "$scenario" -c "$conc" \
    -d "$((settle + count + 30))s" -warmup 3s >"$work/$side/bench.log" 2>&1 &
  local bpid=$!
  sleep "$settle"
  served() {
    curl -s -H "Authorization: Bearer $key" "http://127.0.0.1:$port/metrics" |
      awk '/^hmid_http_request_duration_seconds_count/ { s += $NF } END { print s }'
  }
  local before after
  before=$(served)
  callgrind_control -i on "$vpid" >/dev/null 2>&1
  sleep "$count"
  callgrind_control -i off "$vpid" >/dev/null 2>&1
  after=$(served)
  callgrind_control -d "$vpid" >/dev/null 2>&1
  sleep 2
  kill "$bpid" 2>/dev/null || true
  kill "$vpid" 2>/dev/null || true
  wait "$vpid" 2>/dev/null || true
  local ir n
  ir=$(callgrind_annotate "$work/$side/callgrind.out.1" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
  n=$((after - before - 1)) # the metrics request itself is one
  echo "$side $n $ir $((ir / n))"
}

# One side after the other by default: valgrind is slow enough that two at
# once would each get a core, but a third process (the bench) would then
# compete. TOGETHER=1 runs both sides at once instead, for a machine busy
# with other work: both then share whatever the machine has left, so its
# load weighs on both alike (work done per second of wall time, such as
# timers and background loops, is spread over a like number of requests).
if [ "${TOGETHER:-0}" = 1 ]; then
  measure base 18091 11 >"$work/base.line" &
  measure head 18092 12 >"$work/head.line" &
  wait
  b=$(cat "$work/base.line") h=$(cat "$work/head.line")
else
  b=$(measure base 18091 11)
  h=$(measure head 18092 12)
fi
echo
echo "scenario $scenario, engine $engine: instructions per request (server process)"
printf '%-6s %10s %16s %12s\n' side requests instructions per_request
for line in "$b" "$h"; do printf '%-6s %10s %16s %12s\n' $line; done
awk -v b="${b##* }" -v h="${h##* }" 'BEGIN { printf "head/base %.3f (below 1: head does less work)\n", h / b }'
