# sides.sh is sourced by compare.sh and instructions.sh, which measure the
# work tree (head) against an earlier commit (base), each side a server
# process of its own: it builds both servers and the bench, and gives each
# side its own store. The caller sets work, engine, pg_url and redis_url.

# The system API key and the secret key both sides run with.
key=hm_compareSystemKey0123456789abcdefghijklmnopqr
secret=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=

# build_sides BASE_REV builds $work/hmid-base from BASE_REV (checked out in
# the worktree $work/src), $work/hmid-head from the work tree, and
# $work/bench.
build_sides() {
  git worktree add -q --detach "$work/src" "$1"
  (cd "$work/src" && go build -o "$work/hmid-base" ./cmd/hmid)
  go build -o "$work/hmid-head" ./cmd/hmid
  go build -o "$work/bench" ./bench
}

# side_store SIDE DB_NAME REDIS_DB sets db and redis (declare them local
# first), the database and Redis URLs of one side: on PostgreSQL the new
# database DB_NAME and the emptied Redis database REDIS_DB; on SQLite a file
# in $work/SIDE and no Redis.
side_store() {
  local side=$1 name=$2 rdb=$3
  redis=""
  if [ "$engine" = postgres ]; then
    psql "$pg_url" -qc "DROP DATABASE IF EXISTS $name" -qc "CREATE DATABASE $name" >/dev/null
    db=$(printf '%s' "$pg_url" | sed -E "s|^([a-z]+://[^/]*/)[^?]*|\1$name|")
    redis="$redis_url/$rdb"
    redis-cli -u "$redis" FLUSHDB >/dev/null
  else
    mkdir -p "$work/$side"
    db="sqlite:$work/$side/hmid.db"
  fi
}
