#!/usr/bin/env bash
# Manage an embedded Neo4j Community (with Bolt) for graphmem development and tests.
#
# usage: tools/neo4j/neo4j.sh {build|start|wait|stop|status|restart} [options]
#   build            build the launcher with Maven if it is missing or out of date
#   start            build if needed, then start Neo4j in the background
#   wait [SECONDS]   wait until Bolt answers (default 120 s; env GRAPHMEM_NEO4J_WAIT)
#   stop             SIGTERM, wait for a clean exit, SIGKILL after 60 s
#   status           print running/stopped; exit 0 if running, 3 if not
#   restart          stop, then start
#
# Environment:
#   GRAPHMEM_NEO4J_HOME       run folder (data, logs, pid file); default tools/neo4j/run
#   GRAPHMEM_NEO4J_PORT       Bolt port on 127.0.0.1; default 7687
#   NEO4J_PASSWORD            password of user neo4j (>= 8 chars); default graphmem-test
#   GRAPHMEM_NEO4J_PAGECACHE  page cache size; default 256m
#   GRAPHMEM_NEO4J_HEAP       JVM max heap; default 2g
#   GRAPHMEM_NEO4J_JAVA_OPTS  further JVM options (word-split), e.g. for profiling with JFR
#   GRAPHMEM_NEO4J_MIN_REPLAN seconds before a cached plan may be re-planned; default Neo4j's (10)
#   JAVA                      java binary; default: $JAVA_HOME/bin/java, else java on PATH
#   MVN                       maven binary; default: mvn on PATH
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
TARGET_DIR="$SCRIPT_DIR/target"
LAUNCHER_JAR="$TARGET_DIR/launcher.jar"
LIB_DIR="$TARGET_DIR/lib"
MAIN_CLASS="dev.graphmem.neo4j.Launcher"

RUN_DIR="${GRAPHMEM_NEO4J_HOME:-$SCRIPT_DIR/run}"
PORT="${GRAPHMEM_NEO4J_PORT:-7687}"
if [[ -z "${JAVA:-}" ]]; then
    if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
        JAVA="$JAVA_HOME/bin/java"
    else
        JAVA=java
    fi
fi
MVN="${MVN:-mvn}"
HEAP="${GRAPHMEM_NEO4J_HEAP:-2g}"
STOP_TIMEOUT=60

die() {
    echo "neo4j.sh: $*" >&2
    exit 1
}

# Absolute path of the run folder (it may not exist yet).
resolve_run_dir() {
    case "$RUN_DIR" in
        /*) ;;
        *) RUN_DIR="$PWD/$RUN_DIR" ;;
    esac
    PID_FILE="$RUN_DIR/neo4j.pid"
    PORT_FILE="$RUN_DIR/neo4j.port"
    LOG_FILE="$RUN_DIR/launcher.log"
}

# For wait/status: the port the running instance was started with, if recorded.
use_recorded_port() {
    local recorded
    if [[ -f "$PORT_FILE" ]]; then
        recorded="$(tr -dc '0-9' <"$PORT_FILE")"
        [[ -n "$recorded" ]] && PORT="$recorded"
    fi
    return 0
}

# pid from the pid file if that process is alive and is our launcher, else empty.
running_pid() {
    local pid
    [[ -f "$PID_FILE" ]] || return 0
    pid="$(tr -dc '0-9' <"$PID_FILE")"
    [[ -n "$pid" ]] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    # Guard against a recycled pid: the process must be our launcher.
    if [[ -r "/proc/$pid/cmdline" ]] && ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$MAIN_CLASS"; then
        return 0
    fi
    echo "$pid"
}

needs_build() {
    [[ -f "$LAUNCHER_JAR" ]] || return 0
    [[ -d "$LIB_DIR" ]] || return 0
    compgen -G "$LIB_DIR/neo4j-bolt-*.jar" >/dev/null || return 0
    [[ "$SCRIPT_DIR/pom.xml" -nt "$LAUNCHER_JAR" ]] && return 0
    local newer
    newer="$(find "$SCRIPT_DIR/src" -type f -newer "$LAUNCHER_JAR" -print -quit)"
    [[ -n "$newer" ]] && return 0
    return 1
}

cmd_build() {
    if ! needs_build; then
        return 0
    fi
    command -v "$MVN" >/dev/null 2>&1 || die "maven ('$MVN') not found"
    echo "neo4j.sh: building launcher (first build downloads Neo4j from Maven Central)" >&2
    # Stale jars from an older Neo4j version must not stay on the classpath.
    rm -rf "$LIB_DIR"
    local build_log
    build_log="$(mktemp)"
    if ! (cd "$SCRIPT_DIR" && "$MVN" -q -B -Dstyle.color=never package) >"$build_log" 2>&1; then
        cat "$build_log" >&2
        rm -f "$build_log"
        die "maven build failed"
    fi
    rm -f "$build_log"
    [[ -f "$LAUNCHER_JAR" ]] || die "build did not produce $LAUNCHER_JAR"
    # Make sure the jar is newer than the sources even if Maven skipped repackaging.
    touch "$LAUNCHER_JAR"
}

is_port_open() {
    # bash's /dev/tcp: a connect that succeeds means something listens.
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null
}

cmd_start() {
    resolve_run_dir
    local pid
    pid="$(running_pid)"
    if [[ -n "$pid" ]]; then
        echo "neo4j.sh: already running (pid $pid, home $RUN_DIR)" >&2
        exit 1
    fi
    if is_port_open; then
        die "port $PORT on 127.0.0.1 is already in use (another Neo4j?); set GRAPHMEM_NEO4J_PORT"
    fi
    cmd_build
    command -v "$JAVA" >/dev/null 2>&1 || die "java ('$JAVA') not found"
    mkdir -p "$RUN_DIR"
    rm -f "$PID_FILE"
    # Keep the previous log for post-mortems.
    [[ -f "$LOG_FILE" ]] && mv -f "$LOG_FILE" "$LOG_FILE.1"

    GRAPHMEM_NEO4J_HOME="$RUN_DIR" GRAPHMEM_NEO4J_PORT="$PORT" \
        nohup "$JAVA" \
        --add-opens=java.base/java.nio=ALL-UNNAMED \
        --add-opens=java.base/java.io=ALL-UNNAMED \
        --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
        -Xmx"$HEAP" \
        ${GRAPHMEM_NEO4J_JAVA_OPTS:-} \
        -cp "$LAUNCHER_JAR:$LIB_DIR/*" \
        "$MAIN_CLASS" "$RUN_DIR" \
        </dev/null >"$LOG_FILE" 2>&1 &
    pid=$!
    echo "$pid" >"$PID_FILE"
    echo "$PORT" >"$PORT_FILE"
    # Until the forked shell has exec'd java, its command line is this script's, and running_pid
    # (which checks for the launcher's class) would call it dead: wait for the exec here.
    local deadline=$((SECONDS + 30))
    until [[ -n "$(running_pid)" ]]; do
        if ! kill -0 "$pid" 2>/dev/null || grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null; then
            echo "neo4j.sh: pid $pid exited at start; log tail:" >&2
            tail -n 40 "$LOG_FILE" >&2
            exit 1
        fi
        ((SECONDS < deadline)) || die "pid $pid did not become the launcher within 30 s"
        sleep 0.1
    done
    echo "neo4j.sh: started pid $pid (bolt://127.0.0.1:$PORT, home $RUN_DIR, log $LOG_FILE)"
}

cmd_wait() {
    resolve_run_dir
    local timeout="${1:-${GRAPHMEM_NEO4J_WAIT:-120}}"
    [[ "$timeout" =~ ^[0-9]+$ ]] || die "wait: timeout must be whole seconds, got '$timeout'"
    use_recorded_port
    local deadline=$((SECONDS + timeout)) pid
    while :; do
        pid="$(running_pid)"
        if [[ -z "$pid" ]]; then
            echo "neo4j.sh: neo4j is not running (died or never started); log tail:" >&2
            [[ -f "$LOG_FILE" ]] && tail -n 40 "$LOG_FILE" >&2
            exit 1
        fi
        if grep -q "^graphmem-neo4j ready " "$LOG_FILE" 2>/dev/null && is_port_open; then
            echo "neo4j.sh: ready (pid $pid, bolt://127.0.0.1:$PORT)"
            return 0
        fi
        if ((SECONDS >= deadline)); then
            echo "neo4j.sh: not ready after ${timeout}s; log tail:" >&2
            [[ -f "$LOG_FILE" ]] && tail -n 40 "$LOG_FILE" >&2
            exit 1
        fi
        sleep 0.5
    done
}

cmd_stop() {
    resolve_run_dir
    local pid
    pid="$(running_pid)"
    if [[ -z "$pid" ]]; then
        rm -f "$PID_FILE"
        echo "neo4j.sh: not running"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            echo "neo4j.sh: pid $pid still alive after ${STOP_TIMEOUT}s, sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
            sleep 1
            break
        fi
        sleep 0.2
    done
    rm -f "$PID_FILE"
    echo "neo4j.sh: stopped (pid $pid)"
}

cmd_status() {
    resolve_run_dir
    local pid
    pid="$(running_pid)"
    if [[ -n "$pid" ]]; then
        use_recorded_port
        echo "running pid $pid port $PORT home $RUN_DIR"
        exit 0
    fi
    echo "stopped port $PORT home $RUN_DIR"
    exit 3
}

usage() {
    sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

main() {
    local cmd="${1:-}"
    [[ $# -gt 0 ]] && shift
    case "$cmd" in
        build) cmd_build ;;
        start) cmd_start ;;
        wait) cmd_wait "$@" ;;
        stop) cmd_stop ;;
        status) cmd_status ;;
        restart) cmd_stop && cmd_start ;;
        -h | --help | help) usage ;;
        *)
            usage >&2
            exit 2
            ;;
    esac
}

main "$@"
