#!/usr/bin/env bash
# Whole-process timings of flightrec beside OpenJDK's jfr tool, run side by
# side with hyperfine, plus the reader's Go benchmarks. Numbers go in the
# README's Performance section.
#
#   bash bench/compare.sh            # all
#   RUNS=5 bash bench/compare.sh     # fewer runs
#
# Needs java/javac/jfr (OpenJDK 17) and hyperfine (apt-get install hyperfine).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10}
work=${WORK:-/tmp/flightrec-bench}
mkdir -p "$work"

command -v hyperfine >/dev/null || { echo "hyperfine is missing: apt-get install hyperfine" >&2; exit 1; }
go build -o "$work/flightrec" ./cmd/flightrec
fr="$work/flightrec"

# The JDK 17 sample recording (8.7 MB, 1 chunk, 236,332 events).
[ -f "$work/sample.jfr" ] || gunzip -c jfr/testdata/jdk17-sample.jfr.gz > "$work/sample.jfr"

# A ~190 MB, 14-chunk JDK 17 recording: AllTypes with 12 MB chunks.
if [ ! -f "$work/big.jfr" ]; then
  javac -d "$work/classes" testdata/java/AllTypes.java
  (cd "$work" && java -XX:StartFlightRecording=filename=big.jfr,settings=profile \
      -XX:FlightRecorderOptions=maxchunksize=12M -cp classes AllTypes 1300000 50000 >/dev/null 2>&1)
fi
ls -l "$work/big.jfr" "$work/sample.jfr"
"$fr" summary "$work/big.jfr" | sed -n 2,5p

echo "== summary, 190 MB / 14 chunks"
cmp <("$fr" summary "$work/big.jfr") <(jfr summary "$work/big.jfr") && echo "outputs identical"
hyperfine -N -w 2 -r "$RUNS" "jfr summary $work/big.jfr" "$fr summary $work/big.jfr"

echo "== print --json, sample.jfr (8.7 MB)"
cmp <("$fr" print --json "$work/sample.jfr") <(jfr print --json "$work/sample.jfr") && echo "outputs identical"
hyperfine -w 1 -r "$(( RUNS < 5 ? RUNS : 5 ))" \
  "jfr print --json $work/sample.jfr > /dev/null" "$fr print --json $work/sample.jfr > /dev/null"

echo "== print (human), sample.jfr"
hyperfine -w 1 -r "$(( RUNS < 5 ? RUNS : 5 ))" \
  "jfr print $work/sample.jfr > /dev/null" "$fr print $work/sample.jfr > /dev/null"

echo "== peak memory"
for cmd in "jfr summary $work/big.jfr" "$fr summary $work/big.jfr" \
           "jfr print --json $work/sample.jfr" "$fr print --json $work/sample.jfr"; do
  rss=$( { /usr/bin/time -f %M $cmd > /dev/null; } 2>&1 | tail -1 )
  echo "$rss KiB max RSS: $cmd"
done

echo "== reader benchmarks"
go test ./jfr -run '^$' -bench 'Decode|Records' -benchmem -count 3
