#!/usr/bin/env bash
# Run the Docker-free Neo4j 5.26 dev server (neo4j-harness, Community edition).
#
#   tools/neo4j-devserver/run.sh --bolt-port 7687 --http-port 7474 [--data-dir DIR] \
#       [--page-cache 64m] [--browser-post-connect-cmd 'CMD']
#
# Builds with Maven on first use (target/neo4j-devserver.jar + lib/*.jar), then execs the JVM so
# that SIGTERM/SIGINT reach it directly and trigger a clean shutdown.
# Env: NEO4J_DEVSERVER_JAVA_OPTS  replaces the default heap options (-Xms64m -Xmx1g);
#                                 it comes last, so it can also override the -XX flags below
#      JAVA_HOME                  JDK to use (default: java on PATH, else OpenJDK 17)
#      NEO4J_DEVSERVER_CDS=off    do not use the class-data-sharing archive target/neo4j-devserver.jsa
#      NEO4J_DEVSERVER_CDS_DUMP   write a new CDS archive to this path when the JVM exits
#                                 (devserver.py build does this; the archive roughly halves start-up)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ ! -f "$here/target/neo4j-devserver.jar" || ! -d "$here/lib" ]] \
    || ! compgen -G "$here/lib/neo4j-harness-*.jar" > /dev/null; then
    echo "neo4j-devserver: building (mvn -B -q package; the first build downloads ~160 MB)..." >&2
    (cd "$here" && mvn -B -q package) >&2
fi

if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    java="$JAVA_HOME/bin/java"
elif command -v java > /dev/null 2>&1; then
    java="$(command -v java)"
else
    java=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
fi

# JVM flags from Neo4j 5.26's own conf/neo4j.conf (server.jvm.additional), minus -XX:+AlwaysPreTouch
# (it would commit the whole heap up front and inflate RSS) and JFR/profiling-only options, plus
# -XX:+ExitOnOutOfMemoryError so a dev/test server dies loudly instead of limping on.
neo4j_jvm_flags=(
    -XX:+ExitOnOutOfMemoryError
    -XX:+UseG1GC
    -XX:-OmitStackTraceInFastThrow
    -XX:+UnlockExperimentalVMOptions
    -XX:+TrustFinalNonStaticFields
    -XX:+DisableExplicitGC
    -Djdk.nio.maxCachedBufferSize=1024
    -Dio.netty.tryReflectionSetAccessible=true
    -Djdk.tls.ephemeralDHKeySize=2048
    -Djdk.tls.rejectClientInitiatedRenegotiation=true
    --add-opens=java.base/java.nio=ALL-UNNAMED
    --add-opens=java.base/java.io=ALL-UNNAMED
    --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
    --enable-native-access=ALL-UNNAMED
    -Dlog4j2.disable.jmx=true
    -Dlog4j.layout.jsonTemplate.maxStringLength=32768
)

# AppCDS: a dynamic class-data-sharing archive of the ~240 jars' classes saves most of the class
# loading at start-up. Used only while it is newer than the jar (the JVM itself also rejects an
# archive whose class path no longer matches, and then just loads classes normally).
cds_archive="$here/target/neo4j-devserver.jsa"
cds_opts=()
if [[ -n "${NEO4J_DEVSERVER_CDS_DUMP:-}" ]]; then
    cds_opts=("-XX:ArchiveClassesAtExit=$NEO4J_DEVSERVER_CDS_DUMP")
elif [[ "${NEO4J_DEVSERVER_CDS:-on}" != off && -f "$cds_archive" \
        && "$cds_archive" -nt "$here/target/neo4j-devserver.jar" ]]; then
    cds_opts=("-XX:SharedArchiveFile=$cds_archive" -Xshare:auto)
fi

# shellcheck disable=SC2206  # word splitting of the user's option string is intended
heap_opts=(${NEO4J_DEVSERVER_JAVA_OPTS:--Xms64m -Xmx1g})

exec "$java" "${neo4j_jvm_flags[@]}" "${cds_opts[@]}" "${heap_opts[@]}" \
    -cp "$here/target/neo4j-devserver.jar:$here/lib/*" \
    dev.sonality.devserver.Launcher "$@"
