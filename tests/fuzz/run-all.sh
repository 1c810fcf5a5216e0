#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-all.sh BUILD SECONDS JOBS - run every fuzz target that `make fuzz-build` put in
# BUILD/fuzz/ for SECONDS, up to JOBS processes at once, and print a table: target, runs
# executed, crashes. Exit status 1 when any target found a crash, leak, hang or
# out-of-memory input (or did not run), 0 otherwise.
#
# Each target starts from its seeds (BUILD/fuzz/seeds/TARGET, read only) and from the
# inputs earlier runs found (BUILD/fuzz/out/TARGET/corpus, where new ones go); what it
# finds is written to BUILD/fuzz/out/TARGET/ as crash-*, leak-*, timeout-* or oom-*,
# and its log to BUILD/fuzz/out/TARGET/log. With JOBS at least twice the number of
# targets, every target runs at once with JOBS / targets libFuzzer workers (-fork);
# otherwise JOBS targets run at a time, one process each. The binaries and BUILD/fuzz/
# may be copied to another machine of the same distribution (they need its libzstd,
# libxxhash, libelf and libz) and run there.
#
# Reproduce a finding: BUILD/fuzz/fuzz_TARGET BUILD/fuzz/out/TARGET/crash-...
set -eu

usage() {
	echo "usage: $0 BUILD SECONDS JOBS" >&2
	exit 64
}

# One target: run-all.sh --one BUILD SECONDS FORK TARGET (run by xargs below).
if [ "${1:-}" = --one ]; then
	dir=$2/fuzz seconds=$3 fork=$4 t=$5
	out=$dir/out/$t
	mkdir -p "$out/corpus"
	set -- -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$out/"
	[ "$fork" -gt 1 ] && set -- "$@" -fork="$fork"
	rc=0
	"$dir/fuzz_$t" "$@" "$out/corpus" "$dir/seeds/$t" > "$out/log" 2>&1 || rc=$?
	echo "$rc" > "$out/rc"
	exit 0
fi

[ $# -eq 3 ] || usage
build=$1 seconds=$2 jobs=$3
case $seconds$jobs in *[!0-9]*) usage ;; esac
[ "$seconds" -ge 1 ] && [ "$jobs" -ge 1 ] || usage
dir=$build/fuzz
targets=
for bin in "$dir"/fuzz_*; do
	t=${bin##*/fuzz_}
	[ -x "$bin" ] && [ "$t" != seed ] && targets="$targets $t"
done
[ -n "$targets" ] || { echo "$0: no fuzz targets in $dir (make fuzz-build)" >&2; exit 66; }
n=$(echo $targets | wc -w)
fork=1
par=$jobs
if [ "$jobs" -ge $((2 * n)) ]; then
	fork=$((jobs / n))
	par=$n
fi

echo "fuzzing$targets: ${seconds} s each, $par at a time, $fork worker(s) each"
for t in $targets; do
	rm -f "$dir/out/$t/rc"
	[ -d "$dir/seeds/$t" ] || echo "$0: no seeds for $t in $dir/seeds (make fuzz-build)" >&2
done
echo $targets | tr ' ' '\n' | xargs -P "$par" -I '{}' "$0" --one "$build" "$seconds" "$fork" '{}'

# The last count libFuzzer printed: final stats, "Done N runs", or a -fork status line.
runs_of() {
	log=$1
	r=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
	[ -n "$r" ] || r=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
	[ -n "$r" ] || r=$(sed -n 's/^#\([0-9]*\):* .*/\1/p' "$log" | tail -n 1)
	echo "${r:-?}"
}

bad=0
printf '%-12s %14s %8s  %s\n' target runs crashes notes
for t in $targets; do
	out=$dir/out/$t
	rc=$(cat "$out/rc" 2> /dev/null || echo '?')
	found=$(ls "$out" | grep -cE '^(crash|leak|timeout|oom)-' || true)
	note=
	[ "$found" -gt 0 ] && note="see $out/"
	if [ "$found" -eq 0 ] && [ "$rc" != 0 ]; then
		note="exit status $rc: see $out/log"
		bad=1
	fi
	[ "$found" -gt 0 ] && bad=1
	printf '%-12s %14s %8s  %s\n' "$t" "$(runs_of "$out/log")" "$found" "$note"
done
exit $bad
