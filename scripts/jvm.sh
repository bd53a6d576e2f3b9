#!/bin/sh
# The JVM binding (bindings/jvm): compiles it with Debian's javac against Debian's JNA and
# JetBrains annotations, packs .build/jvm/coordscore.jar, compiles the JUnit 5 suite and the
# Kotlin usage file (Debian's kotlinc), and runs the suite with the JUnit console launcher.
# No network build tool: every jar comes from /usr/share/java (`make deps` installs them).
#
#   scripts/jvm.sh build          the jar, the tests and the Kotlin check
#   scripts/jvm.sh test [ARGS]    build, then run the suite (ARGS go to the console launcher);
#                                 COORDSCORE_LIB names the library, COORDS_RELAY_URL a live relay
set -eu
cd "$(dirname "$0")/.."
JARS=/usr/share/java
OUT=.build/jvm
CP="$JARS/jna.jar:$JARS/org.jetbrains.annotations-java8.jar"
TEST_CP="$CP:$JARS/junit-jupiter-api.jar:$JARS/apiguardian-api.jar:$JARS/opentest4j.jar:$JARS/junit-platform-commons.jar"
for jar in jna org.jetbrains.annotations-java8 junit-platform-console-standalone; do
    [ -f "$JARS/$jar.jar" ] || { echo "jvm: $JARS/$jar.jar is missing: run make deps" >&2; exit 1; }
done
command -v javac >/dev/null || { echo "jvm: javac is missing: run make deps" >&2; exit 1; }

build() {
    rm -rf "$OUT/classes" "$OUT/test-classes" "$OUT/kotlin"
    mkdir -p "$OUT/classes" "$OUT/test-classes" "$OUT/kotlin"
    # -Werror with every lint and Javadoc check on public and protected members.
    javac --release 17 -Werror -Xlint:all -Xdoclint:all/protected -d "$OUT/classes" -cp "$CP" \
        $(find bindings/jvm/src/main/java -name '*.java' | sort)
    (cd "$OUT/classes" && jar --create --file ../coordscore.jar .)
    javac --release 17 -Xlint:all -d "$OUT/test-classes" -cp "$TEST_CP:$OUT/classes" \
        $(find bindings/jvm/src/test/java -name '*.java' | sort)
    if command -v kotlinc >/dev/null; then
        # The API as Kotlin reads it: nullability from the annotations, no checked exceptions.
        JAVA_OPTS="-Xshare:auto" kotlinc -Werror -cp "$CP:$OUT/coordscore.jar" -d "$OUT/kotlin" bindings/jvm/src/kotlin/Usage.kt 2>&1 \
            | grep -v 'Options -Xverify:none and -noverify were deprecated' >&2 || true
        [ -f "$OUT/kotlin/UsageKt.class" ] || { echo "jvm: the Kotlin usage file did not compile" >&2; exit 1; }
    else
        echo "jvm: kotlinc is missing: run make deps" >&2; exit 1
    fi
}

case "${1:-test}" in
    build) build ;;
    test)
        shift || true
        build
        exec java -Dcoordscore.root="$PWD" -jar "$JARS/junit-platform-console-standalone.jar" \
            --class-path "$OUT/test-classes:$OUT/coordscore.jar:$CP:$OUT/kotlin:$JARS/kotlin-stdlib.jar" \
            --select-package org.coordscore --fail-if-no-tests --disable-banner --details=summary "$@" ;;
    *) echo "usage: scripts/jvm.sh build|test [ARGS]" >&2; exit 2 ;;
esac
