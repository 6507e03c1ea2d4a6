#!/bin/sh
# Fetches logback (and slf4j) from Maven Central with mvn and compiles the bidder into
# build/; quiet and quick when both are already there.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
LOGBACK=1.4.14
SLF4J=2.0.7
M2=${MAVEN_REPO:-$HOME/.m2/repository}
CLASSIC=$M2/ch/qos/logback/logback-classic/$LOGBACK/logback-classic-$LOGBACK.jar
CORE=$M2/ch/qos/logback/logback-core/$LOGBACK/logback-core-$LOGBACK.jar
API=$M2/org/slf4j/slf4j-api/$SLF4J/slf4j-api-$SLF4J.jar
if [ ! -f "$CLASSIC" ] || [ ! -f "$CORE" ] || [ ! -f "$API" ]; then
  mvn -q dependency:get -Dartifact=ch.qos.logback:logback-classic:$LOGBACK >&2
fi
CP="$CLASSIC:$CORE:$API"
echo "$CP" > "$HERE/build.classpath.tmp" && mkdir -p "$HERE/build"
mv "$HERE/build.classpath.tmp" "$HERE/build/classpath"
if [ ! -f "$HERE/build/bidder/Bidder.class" ] || [ "$HERE/src/bidder/Bidder.java" -nt "$HERE/build/bidder/Bidder.class" ]; then
  javac -d "$HERE/build" -cp "$CP" "$HERE/src/bidder/Bidder.java" >&2
fi
