#!/usr/bin/env bash
# A MediaForge cluster on loopback, without containers (docs/deploy.md): NATS with JetStream (3 nodes, or
# 1), one jongodb (MongoDB wire, single-node replica set) and N service nodes from the compiled dist/.
#
#   deploy/local/cluster.sh up                 start everything on free ports, print the URLs and admin token
#   deploy/local/cluster.sh status             one line per process; exit 0 only when all are up
#   deploy/local/cluster.sh down [--purge]     stop exactly what `up` started (--purge also removes the folder)
#   deploy/local/cluster.sh kill <name> [SIG]  send SIG (default KILL) and wait until the process is gone
#   deploy/local/cluster.sh stop <name>        SIGTERM and wait for a graceful exit
#   deploy/local/cluster.sh start <name>       start a stopped process again: same ports, storage and env
#
# Names: nats-1..nats-3, mongo, node-1..node-N. Environment: MF_CLUSTER_DIR (state folder, default ./.cluster),
# MF_CLUSTER_NODES (service nodes, default 3), MF_CLUSTER_NATS (1 or 3, default 3), ADMIN_TOKEN (else
# generated). Every other variable of the caller's environment reaches the service nodes (SANDBOX_VIDEO_MS,
# WEBHOOK_ALLOW_PRIVATE, ...), except the ones this script sets for each node.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${MF_CLUSTER_DIR:-./.cluster}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
JONGODB="$ROOT/node_modules/@jongodb/memory-server-bin-linux-x64-gnu/bin/jongodb"
SERVICE_MAIN="$ROOT/dist/src/cli/main.js"
NODE_BIN="$(command -v node)"
NATS_BIN="$(command -v nats-server || true)"

log() { printf '%s\n' "$*" >&2; }
die() { log "cluster.sh: $*"; exit 1; }

pid_of() { [[ -f "$DIR/$1.pid" ]] && cat "$DIR/$1.pid" || true; }
# Alive: the pid exists and is not a zombie (an exited process its new parent has not reaped yet).
alive() {
  [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null || return 1
  [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]]
}

# The names `up` started, in start order (nats first, then mongo, then the nodes).
names() { [[ -f "$DIR/names" ]] && cat "$DIR/names" || true; }

# Free loopback ports: bound all at once (so they differ), then released.
free_ports() {
  "$NODE_BIN" -e '
    const net = require("node:net");
    const n = Number(process.argv[1]);
    const servers = [];
    const next = () => {
      if (servers.length === n) {
        console.log(servers.map((s) => s.address().port).join(" "));
        for (const s of servers) s.close();
        return;
      }
      const s = net.createServer();
      s.listen(0, "127.0.0.1", () => { servers.push(s); next(); });
    };
    next();' "$1"
}

http_status() { curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" 2>/dev/null || true; }

tail_log() { log "---- last lines of $DIR/$1.log ----"; tail -n 40 "$DIR/$1.log" >&2 2>/dev/null || true; }

# Starts the process `name` from its launcher (written by `up`), detached in its own session.
launch() {
  local name="$1"
  [[ -f "$DIR/$name.run" ]] || die "unknown process $name (no $DIR/$name.run)"
  rm -f "$DIR/$name.pid"
  : >>"$DIR/$name.log"
  printf '\n==== %s start %s ====\n' "$name" "$(date -u +%FT%TZ)" >>"$DIR/$name.log"
  setsid nohup bash "$DIR/$name.run" >>"$DIR/$name.log" 2>&1 </dev/null &
  # The launcher writes its own pid (it then execs the process, which keeps that pid).
  local i
  for i in $(seq 1 100); do
    [[ -s "$DIR/$name.pid" ]] && return 0
    sleep 0.05
  done
  die "$name did not start"
}

# Waits until `name` is ready: nats-i answers /healthz and knows a JetStream meta leader; mongo printed its
# URI; node-i printed `listening on` and answers /healthz with 200.
wait_ready() {
  local name="$1" limit_s="${2:-60}" pid deadline
  pid="$(pid_of "$name")"
  deadline=$(($(date +%s) + limit_s))
  while :; do
    alive "$pid" || { log "cluster.sh: $name (pid $pid) exited"; tail_log "$name"; return 1; }
    if is_ready "$name"; then return 0; fi
    if (($(date +%s) > deadline)); then
      log "cluster.sh: $name is not ready after ${limit_s}s"
      tail_log "$name"
      return 1
    fi
    sleep 0.2
  done
}

# The log's text since the last start of the process.
current_log() { awk '/^==== .* start /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$DIR/$1.log"; }

is_ready() {
  local name="$1"
  # shellcheck disable=SC1091
  source "$DIR/ports.env"
  case "$name" in
    nats-*)
      local i="${name#nats-}" mon j peers=0
      mon="NATS_${i}_MONITOR_PORT"
      for ((j = 1; j <= NATS_COUNT; j++)); do
        ((j != i)) && alive "$(pid_of "nats-$j")" && peers=$((peers + 1))
      done
      if [[ "$NATS_COUNT" -gt 1 && "$peers" -eq 0 ]]; then
        # Restarted while every peer is down: no JetStream quorum is possible yet, so serving is ready.
        [[ "$(http_status "http://127.0.0.1:${!mon}/varz")" == 200 ]]
        return
      fi
      [[ "$(http_status "http://127.0.0.1:${!mon}/healthz")" == 200 ]] || return 1
      if [[ "$NATS_COUNT" -gt 1 ]]; then
        local leader
        leader="$(curl -s -m 2 "http://127.0.0.1:${!mon}/jsz" | jq -r '.meta_cluster.leader // empty' 2>/dev/null || true)"
        [[ -n "$leader" ]] || return 1
      fi
      return 0
      ;;
    mongo)
      current_log mongo | grep -q 'JONGODB_URI=' || return 1
      return 0
      ;;
    node-*)
      local i="${name#node-}" port
      port="NODE_${i}_PORT"
      current_log "$name" | grep -q 'listening on http://' || return 1
      [[ "$(http_status "http://127.0.0.1:${!port}/healthz")" == 200 ]] || return 1
      return 0
      ;;
  esac
  return 1
}

# Rewrites cluster.env and cluster.json from ports.env and the pid files.
write_state() {
  # shellcheck disable=SC1091
  source "$DIR/ports.env"
  local mongo_url nats_urls="" node_urls="" i
  mongo_url="$(cat "$DIR/mongo.url" 2>/dev/null || true)"
  for ((i = 1; i <= NATS_COUNT; i++)); do
    local p="NATS_${i}_PORT"
    nats_urls+="${nats_urls:+,}nats://127.0.0.1:${!p}"
  done
  for ((i = 1; i <= NODE_COUNT; i++)); do
    local p="NODE_${i}_PORT"
    node_urls+="${node_urls:+,}http://127.0.0.1:${!p}"
  done
  {
    printf 'MF_CLUSTER_DIR=%q\n' "$DIR"
    printf 'ADMIN_TOKEN=%q\n' "$(cat "$DIR/admin.token")"
    printf 'MONGO_URL=%q\n' "$mongo_url"
    printf 'MONGO_PID=%s\n' "$(pid_of mongo)"
    printf 'NATS_URLS=%q\n' "$nats_urls"
    printf 'NODE_URLS=%q\n' "$node_urls"
    for ((i = 1; i <= NATS_COUNT; i++)); do
      local p="NATS_${i}_PORT" r="NATS_${i}_ROUTE_PORT" m="NATS_${i}_MONITOR_PORT"
      printf 'NATS_%s_URL=nats://127.0.0.1:%s\nNATS_%s_PORT=%s\nNATS_%s_ROUTE_PORT=%s\nNATS_%s_MONITOR_URL=http://127.0.0.1:%s\nNATS_%s_MONITOR_PORT=%s\nNATS_%s_PID=%s\n' \
        "$i" "${!p}" "$i" "${!p}" "$i" "${!r}" "$i" "${!m}" "$i" "${!m}" "$i" "$(pid_of "nats-$i")"
    done
    for ((i = 1; i <= NODE_COUNT; i++)); do
      local p="NODE_${i}_PORT"
      printf 'NODE_%s_URL=http://127.0.0.1:%s\nNODE_%s_PORT=%s\nNODE_%s_PID=%s\n' \
        "$i" "${!p}" "$i" "${!p}" "$i" "$(pid_of "node-$i")"
    done
  } >"$DIR/cluster.env.tmp"
  mv "$DIR/cluster.env.tmp" "$DIR/cluster.env"

  local nats_json="[]" nodes_json="[]" pid
  for ((i = 1; i <= NATS_COUNT; i++)); do
    local p="NATS_${i}_PORT" m="NATS_${i}_MONITOR_PORT"
    pid="$(pid_of "nats-$i")"
    nats_json="$(jq -c --arg name "nats-$i" --arg url "nats://127.0.0.1:${!p}" \
      --arg mon "http://127.0.0.1:${!m}" --argjson pid "${pid:-0}" \
      '. + [{name: $name, url: $url, monitor_url: $mon, pid: $pid}]' <<<"$nats_json")"
  done
  for ((i = 1; i <= NODE_COUNT; i++)); do
    local p="NODE_${i}_PORT"
    pid="$(pid_of "node-$i")"
    nodes_json="$(jq -c --arg name "node-$i" --arg url "http://127.0.0.1:${!p}" --argjson pid "${pid:-0}" \
      '. + [{name: $name, url: $url, pid: $pid}]' <<<"$nodes_json")"
  done
  pid="$(pid_of mongo)"
  jq -n --arg token "$(cat "$DIR/admin.token")" --arg mongo "$mongo_url" --argjson nats "$nats_json" \
    --argjson nodes "$nodes_json" --argjson mpid "${pid:-0}" --arg dir "$DIR" \
    '{dir: $dir, admin_token: $token, mongo_url: $mongo, nats: $nats, nodes: $nodes, mongo: {pid: $mpid}}' \
    >"$DIR/cluster.json.tmp"
  mv "$DIR/cluster.json.tmp" "$DIR/cluster.json"
}

# Waits up to `limit_s` for `name` to exit; escalates to SIGKILL when `escalate` is yes.
wait_gone() {
  local name="$1" limit_s="$2" escalate="$3" pid i
  pid="$(pid_of "$name")"
  for ((i = 0; i < limit_s * 10; i++)); do
    alive "$pid" || return 0
    sleep 0.1
  done
  if [[ "$escalate" == yes ]]; then
    log "cluster.sh: $name (pid $pid) still running after ${limit_s}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do alive "$pid" || return 0; sleep 0.1; done
  fi
  alive "$pid" && return 1
  return 0
}

# Sends `signal` to `name` and waits up to `limit_s` for it to exit (see wait_gone).
signal_and_wait() {
  local name="$1" signal="$2" limit_s="$3" escalate="$4" pid
  pid="$(pid_of "$name")"
  alive "$pid" || return 0
  kill -s "$signal" "$pid" 2>/dev/null || true
  wait_gone "$name" "$limit_s" "$escalate"
}

grace_s() {
  local ms
  ms="$(sed -n 's/^export SHUTDOWN_GRACE_MS=//p' "$DIR/caller.env" 2>/dev/null | tr -d "'\"" || true)"
  echo $((${ms:-30000} / 1000 + 10))
}

# Stops everything `up` started, by pid file: the service nodes first (all at once, each given its shutdown
# grace), then jongodb and NATS.
stop_all() {
  local name pid
  for name in $(names | grep '^node-' || true); do
    pid="$(pid_of "$name")"
    alive "$pid" && kill -TERM "$pid" 2>/dev/null || true
  done
  for name in $(names | grep '^node-' || true); do wait_gone "$name" "$(grace_s)" yes || true; done
  for name in $(names | grep -v '^node-' | tac || true); do
    signal_and_wait "$name" TERM 10 yes || true
  done
  for name in $(names); do
    pid="$(pid_of "$name")"
    # leftovers of the process's session (ffmpeg children, ...)
    [[ -n "$pid" ]] && kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$DIR/$name.pid"
  done
}

cmd_up() {
  local name
  for name in $(names); do
    alive "$(pid_of "$name")" && die "$DIR holds a running cluster ($name is alive): run down first"
  done
  [[ -n "$NATS_BIN" ]] || die "nats-server is not on PATH"
  [[ -x "$JONGODB" ]] || die "jongodb is missing: $JONGODB (npm install)"
  [[ -f "$SERVICE_MAIN" ]] || die "$SERVICE_MAIN is missing: build the service first (npm run build)"
  command -v jq >/dev/null || die "jq is required"
  command -v curl >/dev/null || die "curl is required"

  local node_count="${MF_CLUSTER_NODES:-3}" nats_count="${MF_CLUSTER_NATS:-3}"
  [[ "$node_count" =~ ^[1-9][0-9]*$ ]] || die "MF_CLUSTER_NODES must be a positive integer"
  [[ "$nats_count" == 1 || "$nats_count" == 3 ]] || die "MF_CLUSTER_NATS must be 1 or 3"

  # A fresh state (logs of an earlier run go).
  rm -rf "$DIR"/nats-* "$DIR"/node-* "$DIR"/mongo* "$DIR"/*.pid "$DIR"/*.log "$DIR"/*.run "$DIR"/*.env \
    "$DIR"/cluster.json "$DIR"/names "$DIR"/admin.token
  local token="${ADMIN_TOKEN:-}"
  if [[ -z "$token" ]]; then
    token="mf-admin-$("$NODE_BIN" -e 'process.stdout.write(require("node:crypto").randomBytes(18).toString("hex"))')"
  fi
  ((${#token} >= 16)) || die "ADMIN_TOKEN must have at least 16 characters"
  printf '%s' "$token" >"$DIR/admin.token"
  chmod 600 "$DIR/admin.token"

  # The caller's environment, kept for `start` (same env on a restart). The test runner's own marker and
  # the variables set per node below do not pass.
  export -p | grep -Ev '^declare -x (NODE_TEST_CONTEXT|MONGO_URL|NATS_URL|NATS_REPLICAS|NODE_ID|PORT|HOST|ADMIN_TOKEN|MEDIA_STORE|AUDIT_SINK|PUBLIC_BASE_URL|MF_CLUSTER_[A-Z_]*)=' \
    | sed 's/^declare -x /export /' >"$DIR/caller.env" || true
  chmod 600 "$DIR/caller.env"

  local ports
  read -r -a ports <<<"$(free_ports $((nats_count * 3 + node_count + 1)))"
  {
    echo "NATS_COUNT=$nats_count"
    echo "NODE_COUNT=$node_count"
    local i k=0
    for ((i = 1; i <= nats_count; i++)); do
      echo "NATS_${i}_PORT=${ports[k]}"
      echo "NATS_${i}_ROUTE_PORT=${ports[k + 1]}"
      echo "NATS_${i}_MONITOR_PORT=${ports[k + 2]}"
      k=$((k + 3))
    done
    for ((i = 1; i <= node_count; i++)); do
      echo "NODE_${i}_PORT=${ports[k]}"
      k=$((k + 1))
    done
    echo "MONGO_PORT=${ports[k]}"
  } >"$DIR/ports.env"
  # shellcheck disable=SC1091
  source "$DIR/ports.env"

  # Stop what was started when anything fails from here on.
  trap 'rc=$?; if ((rc != 0)); then log "cluster.sh: up failed, stopping what it started"; stop_all; fi' EXIT

  # ---- NATS ----
  local i j routes nats_urls=""
  for ((i = 1; i <= nats_count; i++)); do
    local p="NATS_${i}_PORT" r="NATS_${i}_ROUTE_PORT" m="NATS_${i}_MONITOR_PORT"
    mkdir -p "$DIR/nats-$i/jetstream"
    nats_urls+="${nats_urls:+,}nats://127.0.0.1:${!p}"
    {
      echo "server_name: nats-$i"
      echo "listen: 127.0.0.1:${!p}"
      echo "http: 127.0.0.1:${!m}"
      echo "jetstream {"
      echo "  store_dir: \"$DIR/nats-$i/jetstream\""
      echo "}"
      if ((nats_count > 1)); then
        routes=""
        for ((j = 1; j <= nats_count; j++)); do
          ((j == i)) && continue
          local rj="NATS_${j}_ROUTE_PORT"
          routes+="    nats-route://127.0.0.1:${!rj}"$'\n'
        done
        echo "cluster {"
        echo "  name: mf-local"
        echo "  listen: 127.0.0.1:${!r}"
        echo "  routes: ["
        printf '%s' "$routes"
        echo "  ]"
        echo "}"
      fi
    } >"$DIR/nats-$i/nats.conf"
    cat >"$DIR/nats-$i.run" <<EOF
echo \$\$ > $(printf '%q' "$DIR/nats-$i.pid")
exec $(printf '%q' "$NATS_BIN") -c $(printf '%q' "$DIR/nats-$i/nats.conf")
EOF
    echo "nats-$i" >>"$DIR/names"
  done

  # ---- jongodb ----
  cat >"$DIR/mongo.run" <<EOF
echo \$\$ > $(printf '%q' "$DIR/mongo.pid")
exec $(printf '%q' "$JONGODB") --host=127.0.0.1 --port=$MONGO_PORT --topology-profile=singleNodeReplicaSet --replica-set-name=rs0
EOF
  echo mongo >>"$DIR/names"

  for ((i = 1; i <= nats_count; i++)); do launch "nats-$i"; done
  launch mongo
  for ((i = 1; i <= nats_count; i++)); do wait_ready "nats-$i" 60; done
  wait_ready mongo 60
  local mongo_url
  mongo_url="$(current_log mongo | sed -n 's/.*JONGODB_URI=\([^[:space:]]*\).*/\1/p' | head -n 1)"
  [[ -n "$mongo_url" ]] || die "no JONGODB_URI in the mongo log"
  printf '%s' "$mongo_url" >"$DIR/mongo.url"

  # ---- service nodes ----
  local replicas=3
  ((nats_count == 1)) && replicas=1
  for ((i = 1; i <= node_count; i++)); do
    local p="NODE_${i}_PORT"
    mkdir -p "$DIR/node-$i/work"
    {
      printf 'export MONGO_URL=%q\n' "$mongo_url"
      printf 'export NATS_URL=%q\n' "$nats_urls"
      printf 'export NATS_REPLICAS=%q\n' "$replicas"
      printf 'export NODE_ID=%q\n' "node-$i"
      printf 'export PORT=%q\n' "${!p}"
      printf 'export HOST=127.0.0.1\n'
      printf 'export ADMIN_TOKEN=%q\n' "$token"
      printf 'export MEDIA_STORE=gridfs\n'
      printf 'export AUDIT_SINK=mongo\n'
    } >"$DIR/node-$i.env"
    chmod 600 "$DIR/node-$i.env"
    cat >"$DIR/node-$i.run" <<EOF
echo \$\$ > $(printf '%q' "$DIR/node-$i.pid")
source $(printf '%q' "$DIR/caller.env") 2>/dev/null || true
source $(printf '%q' "$DIR/node-$i.env")
cd $(printf '%q' "$DIR/node-$i/work")
exec $(printf '%q' "$NODE_BIN") --enable-source-maps $(printf '%q' "$SERVICE_MAIN") serve
EOF
    echo "node-$i" >>"$DIR/names"
  done
  # One at a time: the first creates the streams and consumers the others join.
  for ((i = 1; i <= node_count; i++)); do
    launch "node-$i"
    wait_ready "node-$i" 90
  done

  write_state
  trap - EXIT
  echo "MediaForge local cluster is up (state in $DIR)"
  echo "  admin token: $token"
  echo "  mongo:       $mongo_url"
  for ((i = 1; i <= nats_count; i++)); do
    local p="NATS_${i}_PORT" m="NATS_${i}_MONITOR_PORT"
    echo "  nats-$i:      nats://127.0.0.1:${!p}  (monitor http://127.0.0.1:${!m})"
  done
  for ((i = 1; i <= node_count; i++)); do
    local p="NODE_${i}_PORT"
    echo "  node-$i:      http://127.0.0.1:${!p}"
  done
  echo "  env:         $DIR/cluster.env"
}

cmd_down() {
  stop_all
  if [[ "${1:-}" == --purge ]]; then
    rm -rf "$DIR"
    echo "cluster stopped, $DIR removed"
  else
    echo "cluster stopped (logs kept in $DIR)"
  fi
}

cmd_status() {
  [[ -f "$DIR/ports.env" ]] || { echo "no cluster in $DIR"; return 1; }
  # shellcheck disable=SC1091
  source "$DIR/ports.env"
  local name pid state url health all=0
  for name in $(names); do
    pid="$(pid_of "$name")"
    state=dead
    alive "$pid" && state=alive
    [[ "$state" == alive ]] || all=1
    health=""
    case "$name" in
      nats-*)
        local i="${name#nats-}" p m
        p="NATS_${i}_PORT"; m="NATS_${i}_MONITOR_PORT"
        url="nats://127.0.0.1:${!p}"
        ;;
      mongo) url="$(cat "$DIR/mongo.url" 2>/dev/null || true)" ;;
      node-*)
        local i="${name#node-}" p
        p="NODE_${i}_PORT"
        url="http://127.0.0.1:${!p}"
        health="healthz=$(http_status "$url/healthz")"
        [[ "$health" == healthz=200 ]] || all=1
        ;;
    esac
    printf '%-8s pid=%-8s %-6s %s %s\n' "$name" "${pid:--}" "$state" "$url" "$health"
  done
  return "$all"
}

cmd_kill() {
  local name="${1:?kill <name> [SIGNAL]}" signal="${2:-KILL}"
  grep -qx "$name" <(names) || die "unknown process $name"
  signal="${signal#SIG}"
  local pid
  pid="$(pid_of "$name")"
  alive "$pid" || { log "cluster.sh: $name is not running"; return 0; }
  # Waits until it is gone whatever the signal (a TERM may take the shutdown grace).
  signal_and_wait "$name" "$signal" "$(grace_s)" no || die "$name (pid $pid) is still running"
  write_state
}

cmd_stop() {
  local name="${1:?stop <name>}"
  grep -qx "$name" <(names) || die "unknown process $name"
  signal_and_wait "$name" TERM "$(grace_s)" yes || die "$name did not stop"
  write_state
}

cmd_start() {
  local name="${1:?start <name>}"
  grep -qx "$name" <(names) || die "unknown process $name"
  alive "$(pid_of "$name")" && die "$name is already running"
  launch "$name"
  case "$name" in
    mongo)
      # jongodb keeps its data in memory: it comes back on the same port (the nodes' MONGO_URL) but empty.
      wait_ready mongo 60
      log "cluster.sh: warning: jongodb keeps data in memory only: mongo restarted EMPTY on the same port"
      ;;
    node-*) wait_ready "$name" 90 ;;
    *) wait_ready "$name" 120 ;; # a NATS node is ready once every stream and consumer it holds is current
  esac
  write_state
  echo "$name started (pid $(pid_of "$name"))"
}

verb="${1:-}"
shift || true
case "$verb" in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  status) cmd_status "$@" ;;
  kill) cmd_kill "$@" ;;
  stop) cmd_stop "$@" ;;
  start) cmd_start "$@" ;;
  *)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
