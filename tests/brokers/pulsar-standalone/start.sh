#!/usr/bin/env bash
# Start Apache Pulsar standalone (broker + BookKeeper + RocksDB metadata store, one JVM) from
# Maven Central artifacts, bound to 127.0.0.1 only, and wait until it is ready.
#
#   start.sh WORKDIR
#
# Writes WORKDIR/standalone.conf, WORKDIR/pulsar.pid, WORKDIR/pulsar.log; data under WORKDIR/data.
# Exit 0 once the broker port accepts connections, the namespace public/default exists and a
# topic can be created in it (which needs a writable bookie);
# non-zero (with the log tail on stderr) otherwise.
#
# Environment (all optional):
#   PULSAR_PORT          broker (binary protocol) port, default 6650
#   PULSAR_HTTP_PORT     admin/web port, default 8080
#   PULSAR_START_TIMEOUT seconds to wait for readiness, default 180
#   PULSAR_MEM           JVM memory flags, default "-Xms128m -Xmx512m -XX:MaxDirectMemorySize=512m"
#   PULSAR_EXTRA_OPTS    more JVM flags
#   PULSAR_EXTRA_CONF    more standalone.conf lines (key=value, newline-separated); not for
#                        keys this script writes itself (the bookie reads the first of a
#                        repeated key, the broker the last)
#   PULSAR_TRANSACTIONS=1  enable transactions (PIP-31): `transactionCoordinatorEnabled=true`
#                        (false otherwise), and readiness also waits until the transaction
#                        coordinators' topic, pulsar/system/transaction_coordinator_assign,
#                        reports at least one partition (the standalone creates it itself;
#                        clients find the coordinators there)
#   PULSAR_WIPE_DATA=1   delete WORKDIR/data before starting
#
# Security (all off unless set; the plaintext ports above keep serving, with the same checks):
#   PULSAR_TLS_CERT_FILE  the broker's PEM certificate (leaf first, then any intermediates; its
#                        SAN must name 127.0.0.1 for clients that verify the host): turns on the
#                        TLS listeners brokerServicePortTls and webServicePortTls
#                        (tlsCertificateFilePath)
#   PULSAR_TLS_KEY_FILE  its private key, PKCS#8 PEM ("BEGIN PRIVATE KEY"; tlsKeyFilePath);
#                        required with PULSAR_TLS_CERT_FILE
#   PULSAR_TLS_TRUST_CERTS_FILE  PEM CA certificate(s) that client certificates must chain to
#                        (tlsTrustCertsFilePath); clients need not present one
#                        (tlsRequireTrustedClientCertOnConnect=false), so token clients without
#                        a certificate still connect over TLS
#   PULSAR_TLS_PORT      binary protocol over TLS port (pulsar+ssl://), default 6651
#   PULSAR_HTTPS_PORT    admin/web over TLS port (https://), default 8443
#   PULSAR_TOKEN_PUBLIC_KEY_FILE  the public key JWTs are checked with, DER X.509
#                        SubjectPublicKeyInfo (not PEM): turns on authentication with
#                        AuthenticationProviderToken (role = the `sub` claim; RS256, or
#                        PULSAR_TOKEN_ALG, e.g. ES256 for an EC key)
#   PULSAR_TLS_AUTH=1    also authenticate by client certificate (AuthenticationProviderTls,
#                        role = the certificate's CN); needs PULSAR_TLS_CERT_FILE,
#                        PULSAR_TLS_TRUST_CERTS_FILE and PULSAR_TOKEN_PUBLIC_KEY_FILE
#   PULSAR_ADMIN_TOKEN_FILE  a file holding a superuser's JWT (the token alone); required with
#                        authentication: the standalone's own clients authenticate with it
#                        (brokerClientAuthenticationPlugin/Parameters), and so do this script's
#                        readiness checks (Authorization: Bearer)
#   PULSAR_SUPERUSER_ROLES  comma-separated superuser roles: turns on authorization
#                        (authorizationEnabled, superUserRoles); needs authentication, and must
#                        include the admin token's role
#   PULSAR_AUTH_REFRESH_CHECK_SECONDS  how often the broker checks its connections'
#                        credentials for expiry (authenticationRefreshCheckSeconds), default 1
#                        with authentication (the broker's own default is 60)
#   PULSAR_M2_REPO       Maven local repository (default: Maven's own, ~/.m2/repository)
#   JAVA_HOME            JDK 17+ to use (default: java on PATH)
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 WORKDIR" >&2
    exit 2
fi

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$1"
WORKDIR="$(cd "$1" && pwd)"
PORT="${PULSAR_PORT:-6650}"
HTTP_PORT="${PULSAR_HTTP_PORT:-8080}"
TIMEOUT="${PULSAR_START_TIMEOUT:-180}"
MEM="${PULSAR_MEM:--Xms128m -Xmx512m -XX:MaxDirectMemorySize=512m}"
PIDFILE="$WORKDIR/pulsar.pid"
LOG="$WORKDIR/pulsar.log"
ADMIN="http://127.0.0.1:$HTTP_PORT/admin/v2"
if [[ "${PULSAR_TRANSACTIONS:-0}" == 1 ]]; then TRANSACTIONS=true; else TRANSACTIONS=false; fi
TLS_PORT="${PULSAR_TLS_PORT:-6651}"
HTTPS_PORT="${PULSAR_HTTPS_PORT:-8443}"
REFRESH_CHECK="${PULSAR_AUTH_REFRESH_CHECK_SECONDS:-1}"

# ---- 0. the security settings asked for, checked before anything starts -----------------------
refuse() { echo "start.sh: $*" >&2; exit 2; }
# A file's absolute path, which must exist and be readable.
readable() {
    [[ -r "$2" && -f "$2" ]] || refuse "$1=$2 is not a readable file"
    echo "$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
}
TLS=false; AUTHN=false; AUTHZ=false; TLS_AUTH=false; TOKEN_AUTH=false
if [[ -n "${PULSAR_TLS_CERT_FILE:-}" ]]; then
    TLS=true
    TLS_CERT="$(readable PULSAR_TLS_CERT_FILE "$PULSAR_TLS_CERT_FILE")"
    [[ -n "${PULSAR_TLS_KEY_FILE:-}" ]] || refuse "PULSAR_TLS_CERT_FILE needs PULSAR_TLS_KEY_FILE (the broker's PKCS#8 PEM key)"
    TLS_KEY="$(readable PULSAR_TLS_KEY_FILE "$PULSAR_TLS_KEY_FILE")"
    grep -q -- "-----BEGIN PRIVATE KEY-----" "$TLS_KEY" \
        || refuse "PULSAR_TLS_KEY_FILE is not a PKCS#8 PEM key (no \"BEGIN PRIVATE KEY\" line); convert it with \`openssl pkcs8 -topk8 -nocrypt\`"
    TLS_TRUST=""
    if [[ -n "${PULSAR_TLS_TRUST_CERTS_FILE:-}" ]]; then
        TLS_TRUST="$(readable PULSAR_TLS_TRUST_CERTS_FILE "$PULSAR_TLS_TRUST_CERTS_FILE")"
    fi
elif [[ -n "${PULSAR_TLS_KEY_FILE:-}${PULSAR_TLS_TRUST_CERTS_FILE:-}" ]]; then
    refuse "PULSAR_TLS_KEY_FILE and PULSAR_TLS_TRUST_CERTS_FILE need PULSAR_TLS_CERT_FILE (the broker's certificate)"
fi
if [[ -n "${PULSAR_TOKEN_PUBLIC_KEY_FILE:-}" ]]; then
    TOKEN_AUTH=true; AUTHN=true
    TOKEN_KEY="$(readable PULSAR_TOKEN_PUBLIC_KEY_FILE "$PULSAR_TOKEN_PUBLIC_KEY_FILE")"
    if grep -q -- "-----BEGIN" "$TOKEN_KEY"; then
        refuse "PULSAR_TOKEN_PUBLIC_KEY_FILE is PEM; the broker reads a DER public key (\`openssl pkey -pubin -in KEY.pem -outform DER\`)"
    fi
fi
if [[ "${PULSAR_TLS_AUTH:-0}" == 1 ]]; then
    TLS_AUTH=true; AUTHN=true
    [[ "$TLS" == true && -n "$TLS_TRUST" ]] \
        || refuse "PULSAR_TLS_AUTH=1 needs TLS with a CA for client certificates (PULSAR_TLS_CERT_FILE, PULSAR_TLS_KEY_FILE, PULSAR_TLS_TRUST_CERTS_FILE)"
    [[ "$TOKEN_AUTH" == true ]] \
        || refuse "PULSAR_TLS_AUTH=1 needs PULSAR_TOKEN_PUBLIC_KEY_FILE too: the standalone's own clients and the readiness checks authenticate with PULSAR_ADMIN_TOKEN_FILE"
fi
ADMIN_HEADER=()
if [[ "$AUTHN" == true ]]; then
    [[ -n "${PULSAR_ADMIN_TOKEN_FILE:-}" ]] \
        || refuse "authentication needs PULSAR_ADMIN_TOKEN_FILE, a superuser's token for the standalone's own clients and the readiness checks"
    ADMIN_TOKEN="$(readable PULSAR_ADMIN_TOKEN_FILE "$PULSAR_ADMIN_TOKEN_FILE")"
    [[ "$REFRESH_CHECK" =~ ^[1-9][0-9]*$ ]] \
        || refuse "PULSAR_AUTH_REFRESH_CHECK_SECONDS must be a whole number of seconds, at least 1"
fi
if [[ -n "${PULSAR_SUPERUSER_ROLES:-}" ]]; then
    AUTHZ=true
    [[ "$AUTHN" == true ]] \
        || refuse "PULSAR_SUPERUSER_ROLES (authorization) needs authentication: set PULSAR_TOKEN_PUBLIC_KEY_FILE and PULSAR_ADMIN_TOKEN_FILE"
fi

if [[ -n "${JAVA_HOME:-}" ]]; then JAVA="$JAVA_HOME/bin/java"; else JAVA="$(command -v java)"; fi

# Whether something accepts TCP connections on 127.0.0.1:$1.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---- 1. the classpath, resolved by Maven once and cached beside the local repository ----------
M2_ARGS=()
if [[ -n "${PULSAR_M2_REPO:-}" ]]; then M2_ARGS+=("-Dmaven.repo.local=$PULSAR_M2_REPO"); fi
POM_SUM="$(cat "$HERE/pom.xml" "$HERE/settings.xml" | sha256sum | cut -c1-16)"
CACHE_DIR="${PULSAR_M2_REPO:-$HOME/.m2/repository}/../ruststream-pulsar-standalone"
mkdir -p "$CACHE_DIR"
CPFILE="$CACHE_DIR/classpath-$POM_SUM.txt"

cp_complete() {
    [[ -s "$CPFILE" ]] || return 1
    local jar
    while IFS= read -r -d: jar || [[ -n "$jar" ]]; do
        [[ -f "$jar" ]] || return 1
    done < "$CPFILE"
}

if ! cp_complete; then
    echo "start.sh: resolving Pulsar from Maven Central (first run downloads ~250 MB)..." >&2
    if ! mvn -B -q -s "$HERE/settings.xml" -f "$HERE/pom.xml" "${M2_ARGS[@]}" \
            dependency:build-classpath -Dmdep.includeScope=runtime \
            -Dmdep.outputFile="$CPFILE.tmp" > "$WORKDIR/mvn.log" 2>&1; then
        echo "start.sh: Maven resolution failed; see $WORKDIR/mvn.log" >&2
        tail -n 30 "$WORKDIR/mvn.log" >&2
        exit 1
    fi
    mv "$CPFILE.tmp" "$CPFILE"
fi

# ---- 2. already running? ------------------------------------------------------------------------
if [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    # Probe the ports that instance was started with, not the ones in this environment.
    PORT="$(sed -n 's/^brokerServicePort=//p' "$WORKDIR/standalone.conf")"
    HTTP_PORT="$(sed -n 's/^webServicePort=//p' "$WORKDIR/standalone.conf")"
    ADMIN="http://127.0.0.1:$HTTP_PORT/admin/v2"
    TRANSACTIONS="$(sed -n 's/^transactionCoordinatorEnabled=//p' "$WORKDIR/standalone.conf")"
    TLS_PORT="$(sed -n 's/^brokerServicePortTls=//p' "$WORKDIR/standalone.conf")"
    if [[ -n "$TLS_PORT" ]]; then TLS=true; else TLS=false; fi
    # With authentication on, the readiness checks use the token the instance's own clients do.
    AUTHN="$(sed -n 's/^authenticationEnabled=//p' "$WORKDIR/standalone.conf" | head -n 1)"
    if [[ "$AUTHN" == true ]]; then
        ADMIN_TOKEN="$(sed -n 's|^brokerClientAuthenticationParameters=file://||p' "$WORKDIR/standalone.conf")"
    fi
    echo "start.sh: already running (pid $(cat "$PIDFILE")); waiting for readiness" >&2
else
    PORTS=("$PORT" "$HTTP_PORT")
    if [[ "$TLS" == true ]]; then PORTS+=("$TLS_PORT" "$HTTPS_PORT"); fi
    for p in "${PORTS[@]}"; do
        if port_open "$p"; then
            echo "start.sh: port $p on 127.0.0.1 is already in use" >&2
            exit 1
        fi
    done

    # ---- 3. configuration ---------------------------------------------------------------------
    if [[ "${PULSAR_WIPE_DATA:-0}" == 1 ]]; then rm -rf "$WORKDIR/data"; fi
    mkdir -p "$WORKDIR/data" "$WORKDIR/tmp"
    # BookKeeper turns its bookie read-only once the disk holding the ledgers is more than
    # `diskUsageThreshold` full (0.95 by default): on a build machine whose large disk also holds
    # cargo targets of tens of GB, that happens with 10 GB or more still free, while these brokers
    # store some tens of MB. So the bookie here stops writing when less than 2 GiB are left,
    # whatever the disk's size (never below the default fraction, at most 0.999).
    DISK_KB="$(df -Pk "$WORKDIR/data" | awk 'NR == 2 { print $2 }')"
    read -r DISK_FULL DISK_LWM <<< "$(awk -v kb="$DISK_KB" 'BEGIN {
        f = 1 - 2 * 1024 * 1024 / kb; if (f < 0.95) f = 0.95; if (f > 0.999) f = 0.999
        printf "%.4f %.4f\n", f, f - 0.01 }')"
    # One file serves both the broker (ServiceConfiguration) and the bookie (ServerConfiguration).
    cat > "$WORKDIR/standalone.conf" <<EOF
# Written by start.sh; regenerated on every start.
clusterName=standalone
bindAddress=127.0.0.1
advertisedAddress=127.0.0.1
brokerServicePort=$PORT
webServicePort=$HTTP_PORT

# One bookie: every ledger on it.
managedLedgerDefaultEnsembleSize=1
managedLedgerDefaultWriteQuorum=1
managedLedgerDefaultAckQuorum=1

allowAutoTopicCreation=true
allowAutoTopicCreationType=non-partitioned
transactionCoordinatorEnabled=$TRANSACTIONS
functionsWorkerEnabled=false
webSocketServiceEnabled=false
enablePackagesManagement=false
exposeTopicLevelMetricsInPrometheus=false
loadBalancerOverrideBrokerNicSpeedGbps=10
authenticationEnabled=$AUTHN
authorizationEnabled=$AUTHZ

# Bookie: listen on the loopback interface only, no HTTP server, no fsync per entry.
listeningInterface=lo
allowLoopback=true
httpServerEnabled=false
journalSyncData=false
ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage
dbStorage_writeCacheMaxSizeMb=32
dbStorage_readAheadCacheMaxSizeMb=32
dbStorage_rocksDB_blockCacheSize=16777216
managedLedgerCacheSizeMB=64
diskUsageThreshold=$DISK_FULL
diskUsageWarnThreshold=$DISK_FULL
diskUsageLwmThreshold=$DISK_LWM
EOF
    # Security (the header of this script says what each variable turns on).
    {
        if [[ "$TLS" == true ]]; then
            echo
            echo "# TLS listeners beside the plaintext ones (PULSAR_TLS_CERT_FILE)."
            echo "brokerServicePortTls=$TLS_PORT"
            echo "webServicePortTls=$HTTPS_PORT"
            echo "tlsCertificateFilePath=$TLS_CERT"
            echo "tlsKeyFilePath=$TLS_KEY"
            if [[ -n "$TLS_TRUST" ]]; then echo "tlsTrustCertsFilePath=$TLS_TRUST"; fi
            echo "tlsRequireTrustedClientCertOnConnect=false"
            echo "tlsAllowInsecureConnection=false"
        fi
        if [[ "$AUTHN" == true ]]; then
            PROVIDERS=()
            if [[ "$TOKEN_AUTH" == true ]]; then PROVIDERS+=(org.apache.pulsar.broker.authentication.AuthenticationProviderToken); fi
            if [[ "$TLS_AUTH" == true ]]; then PROVIDERS+=(org.apache.pulsar.broker.authentication.AuthenticationProviderTls); fi
            echo
            echo "# Authentication (PULSAR_TOKEN_PUBLIC_KEY_FILE, PULSAR_TLS_AUTH)."
            echo "authenticationProviders=$(IFS=,; echo "${PROVIDERS[*]}")"
            echo "tokenPublicKey=file://$TOKEN_KEY"
            echo "tokenPublicAlg=${PULSAR_TOKEN_ALG:-RS256}"
            echo "authenticationRefreshCheckSeconds=$REFRESH_CHECK"
            echo "brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken"
            echo "brokerClientAuthenticationParameters=file://$ADMIN_TOKEN"
        fi
        if [[ "$AUTHZ" == true ]]; then
            echo
            echo "# Authorization (PULSAR_SUPERUSER_ROLES)."
            echo "superUserRoles=$PULSAR_SUPERUSER_ROLES"
        fi
    } >> "$WORKDIR/standalone.conf"
    # More broker settings, one `key=value` per line (e.g. acknowledgmentAtBatchIndexLevelEnabled=true).
    if [[ -n "${PULSAR_EXTRA_CONF:-}" ]]; then printf '%s\n' "$PULSAR_EXTRA_CONF" >> "$WORKDIR/standalone.conf"; fi

    # ---- 4. start the JVM in its own session (so stop.sh can signal the whole group) -----------
    # PULSAR_MEM and PULSAR_EXTRA_OPTS are split on whitespace (no quoting inside them).
    read -r -a MEM_OPTS <<< "$MEM"
    read -r -a EXTRA_OPTS <<< "${PULSAR_EXTRA_OPTS:-}"
    JVM_OPTS=(
        "${MEM_OPTS[@]}"
        -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError
        -Djava.io.tmpdir="$WORKDIR/tmp"
        -Dlog4j2.configurationFile="$HERE/log4j2.xml"
        -Dpulsar.allocator.exit_on_oom=true
        -Dio.netty.recycler.maxCapacityPerThread=4096
        -Dio.netty.tryReflectionSetAccessible=true
        -Dzookeeper.4lw.commands.whitelist=
        --add-opens java.base/java.io=ALL-UNNAMED
        --add-opens java.base/java.lang=ALL-UNNAMED
        --add-opens java.base/java.nio=ALL-UNNAMED
        --add-opens java.base/java.util.zip=ALL-UNNAMED
        --add-opens java.base/jdk.internal.misc=ALL-UNNAMED
        --add-opens java.base/jdk.internal.platform=ALL-UNNAMED
        --add-opens java.base/sun.net=ALL-UNNAMED
        --add-opens java.management/sun.management=ALL-UNNAMED
        --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
        "${EXTRA_OPTS[@]}"
    )
    cd "$WORKDIR"
    setsid "$JAVA" "${JVM_OPTS[@]}" -cp "$(cat "$CPFILE")" org.apache.pulsar.PulsarStandaloneStarter \
        --config "$WORKDIR/standalone.conf" \
        --metadata-dir "$WORKDIR/data/metadata" \
        --bookkeeper-dir "$WORKDIR/data/bookkeeper" \
        --zookeeper-dir "$WORKDIR/data/zookeeper-unused" \
        --advertised-address 127.0.0.1 \
        --no-functions-worker --no-stream-storage \
        < /dev/null > "$LOG" 2>&1 &
    echo $! > "$PIDFILE"
fi

# The admin API's credentials, when authentication is on: a header file (curl -H @FILE), so that
# the token is on no command line.
if [[ "$AUTHN" == true ]]; then
    (umask 077 && printf 'Authorization: Bearer %s\n' "$(tr -d '\r\n' < "$ADMIN_TOKEN")" > "$WORKDIR/admin-auth.header")
    ADMIN_HEADER=(-H "@$WORKDIR/admin-auth.header")
fi

# Whether a topic can be created in public/default: that takes a ledger, so a writable bookie.
# A bookie whose disk is full (step 3) registers read-only, and then every new topic
# fails with "Not enough non-faulty bookies" while the ports and the admin API answer; clients
# such as pulsar-rs retry that for ever. (409: created by an earlier start on this folder.)
ledger_ok() {
    local code
    code="$(curl -s "${ADMIN_HEADER[@]}" -o /dev/null -w '%{http_code}' -m 30 -X PUT \
        "$ADMIN/persistent/public/default/ruststream-ready" 2>/dev/null || true)"
    [[ "$code" == 204 || "$code" == 409 ]]
}

# Whether the transaction coordinators can be found, if transactions are on: clients look up
# the partitions of this topic, one for each coordinator, and find none until the standalone has
# created it (it answers {"partitions":0} until then).
coordinators_ok() {
    [[ "$TRANSACTIONS" != true ]] && return 0
    local partitions
    partitions="$(curl -fsS "${ADMIN_HEADER[@]}" -m 5 "$ADMIN/persistent/pulsar/system/transaction_coordinator_assign/partitions" \
        2>/dev/null | sed -n 's/.*"partitions" *: *\([0-9][0-9]*\).*/\1/p' || true)"
    [[ -n "$partitions" && "$partitions" -ge 1 ]]
}

# ---- 5. readiness: binary port open, admin answers, public/default exists and takes topics -------
# (and, with transactions, the coordinators' topic has its partitions)
PID="$(cat "$PIDFILE")"
deadline=$((SECONDS + TIMEOUT))
while :; do
    if ! kill -0 "$PID" 2>/dev/null; then
        echo "start.sh: Pulsar (pid $PID) exited during startup; last lines of $LOG:" >&2
        tail -n 60 "$LOG" >&2
        rm -f "$PIDFILE"
        exit 1
    fi
    # (tenants first: asking for a namespace of a tenant not yet created logs an ERROR in Pulsar)
    if port_open "$PORT" \
        && curl -fsS "${ADMIN_HEADER[@]}" -m 5 "$ADMIN/tenants" 2>/dev/null | grep -q '"public"' \
        && curl -fsS "${ADMIN_HEADER[@]}" -m 5 "$ADMIN/namespaces/public" 2>/dev/null | grep -q '"public/default"' \
        && ledger_ok \
        && coordinators_ok; then
        echo "start.sh: Pulsar ready in ${SECONDS}s (pid $PID, pulsar://127.0.0.1:$PORT, http://127.0.0.1:$HTTP_PORT$([[ "$TLS" == true ]] && echo ", pulsar+ssl://127.0.0.1:$TLS_PORT")$([[ "$AUTHN" == true ]] && echo ", authentication on")$([[ "$TRANSACTIONS" == true ]] && echo ", transactions on"))" >&2
        exit 0
    fi
    if (( SECONDS >= deadline )); then
        echo "start.sh: Pulsar not ready after ${TIMEOUT}s; stopping pid $PID; last lines of $LOG:" >&2
        if grep -q "DiskChecker" "$LOG"; then
            echo "start.sh: its bookie is read-only because the disk holding $WORKDIR is" \
                "more than $(sed -n 's/^diskUsageThreshold=//p' "$WORKDIR/standalone.conf") full" \
                "(DiskChecker in the log; $(df -Ph "$WORKDIR" | awk 'NR == 2 { print $4 }') free);" \
                "free some space and start again" >&2
        fi
        tail -n 60 "$LOG" >&2
        "$HERE/stop.sh" "$WORKDIR" >&2 || true
        exit 1
    fi
    sleep 1
done
