#!/usr/bin/env bash
# compare.sh measures hot paths of the work tree against an earlier commit,
# each as a separate server process, in interleaved rounds (base, head, base,
# head, …) so that a machine getting busier or cooler shifts both sides alike.
# It prints every round and then, per scenario, the median requests/s, p99
# and server CPU time per request of each side, and their ratios (head / base).
#
#   bench/compare.sh 9e32cc8                           # SQLite
#   ENGINE=postgres bench/compare.sh 9e32cc8           # PostgreSQL + Redis
#   SCENARIOS=oauth-refresh ROUNDS=5 DUR=15s bench/compare.sh v1.2.0
#
# Environment: SCENARIOS (comma-separated; default the OAuth hot paths),
# ROUNDS (3), DUR (10s per scenario and round), CONC (32 clients), ENGINE
# (sqlite or postgres), PG_URL (a PostgreSQL server; two databases
# hmid_cmp_base and hmid_cmp_head are created on it anew), REDIS_URL (Redis;
# dbs 13 and 14 are emptied and used).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/sides.sh

base_rev=${1:?usage: bench/compare.sh BASE_COMMIT}
scenarios=${SCENARIOS:-oauth-refresh,oauth-userinfo,oauth-code-flow}
rounds=${ROUNDS:-3}
dur=${DUR:-10s}
conc=${CONC:-32}
engine=${ENGINE:-sqlite}
pg_url=${PG_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
redis_url=${REDIS_URL:-redis://127.0.0.1:6379}

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  git worktree remove --force "$work/src" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "building $base_rev and the work tree"
build_sides "$base_rev"

# start SIDE PORT REDIS_DB starts one server and waits until it answers.
start() {
  local side=$1 port=$2 rdb=$3 db redis
  side_store "$side" "hmid_cmp_$side" "$rdb"
  HMID_ADDR=127.0.0.1:$port HMID_PUBLIC_URL=http://127.0.0.1:$port HMID_DATABASE_URL=$db \
    HMID_REDIS_URL=$redis HMID_SECRET_KEY=$secret HMID_SYSTEM_API_KEY=$key \
    HMID_TRUSTED_PROXIES=127.0.0.1/32 HMID_ACCESS_LOG=off HMID_LOG_LEVEL=error \
    "$work/hmid-$side" >"$work/$side.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "the $side server did not start:" >&2
  cat "$work/$side.log" >&2
  exit 1
}

start base 18081 13
start head 18082 14

# cpu PID prints the user + system CPU time the process has used, in clock
# ticks (proc(5), /proc/PID/stat fields 14 and 15).
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

results=$work/results
: >"$results"
for r in $(seq 1 "$rounds"); do
  for side in base head; do
    port=18081 pid=${pids[0]}
    [ "$side" = head ] && port=18082 pid=${pids[1]}
    for s in ${scenarios//,/ }; do
      # Each scenario alone, so the server's CPU time over its run (setup
      # and warm-up included, alike on both sides) is its own.
      before=$(cpu "$pid")
      line=$("$work/bench" -target "http://127.0.0.1:$port" -key "$key" -scenario "$s" -c "$conc" -d "$dur" | grep 'req/s')
      after=$(cpu "$pid")
      echo "  $side round $r: $line" >&2
      awk -v side="$side" -v round="$r" -v ticks=$((after - before)) -v hz="$hz" '{
        sub(/ms$/, "", $7); split($NF, n, "/")
        printf "%s %s %s %s %s %.1f\n", side, round, $1, $2, $7, ticks / hz * 1e6 / n[2] }' <<<"$line" >>"$results"
    done
  done
done

echo
echo "engine $engine, $rounds rounds of $dur, $conc clients; medians, and head/base"
echo "(cpu_us: the server process's CPU time per measured request, which a busy machine changes less than req/s)"
printf '%-18s %10s %10s %7s %10s %10s %9s %9s %7s\n' scenario base_rps head_rps ratio base_p99ms head_p99ms base_cpu_us head_cpu_us cpu_ratio
for s in ${scenarios//,/ }; do
  med() { grep "^$1 [0-9]* $s " "$results" | awk -v f="$2" '{print $f}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  b=$(med base 4) h=$(med head 4) bp=$(med base 5) hp=$(med head 5) bc=$(med base 6) hc=$(med head 6)
  printf '%-18s %10.1f %10.1f %6.2fx %10.3f %10.3f %9.1f %9.1f %6.2fx\n' "$s" "$b" "$h" \
    "$(awk -v h="$h" -v b="$b" 'BEGIN { print h / b }')" "$bp" "$hp" "$bc" "$hc" "$(awk -v h="$hc" -v b="$bc" 'BEGIN { print h / b }')"
done
