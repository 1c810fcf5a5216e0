#!/bin/sh
# driver-speed.sh - where the time of a driver-assisted checkpoint and restart
# goes, for a Runtime API program with MIB MiB of device memory (default 8192):
# the driver's calls, selfckpt's image, the whole restart.
#   sh samples/cuda/rt/driver-speed.sh BUILD [MIB]
set -u
b=$(cd "$1" && pwd) || exit 2
mib=${2:-8192}
d=$(mktemp -d /tmp/sc-speed-XXXXXX)
lines() { n=$(grep -c '^iter ' "$1" 2> /dev/null); echo "${n:-0}"; }
SELFCKPT_LOG_LEVEL=debug "$b/bin/selfckpt-run" --dir "$d" -- "$b/samples/cuda/rtloop" \
	--mib "$mib" --iters 8 --sleep-ms 500 > "$d/run.out" 2> "$d/run.err" &
pid=$!
i=0
while [ "$(lines "$d/run.out")" -lt 2 ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
t0=$(date +%s.%N)
kill -USR2 $pid
while [ ! -e "$d/latest" ] && [ $i -lt 2400 ]; do sleep 0.02; i=$((i + 1)); done
t1=$(date +%s.%N)
wait $pid
echo "run exit $?; image in place $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s after SIGUSR2; $(du -h "$d"/*.sckpt | cut -f1)"
grep -E 'driver-ckpt|checkpoint:' "$d/run.err" | sed 's/^/  /'
sync
echo 3 > /proc/sys/vm/drop_caches 2> /dev/null
t0=$(date +%s.%N)
SELFCKPT_LOG_LEVEL=debug "$b/bin/selfckpt-restore" "$d/latest" > "$d/rest.out" 2> "$d/rest.err"
st=$?
t1=$(date +%s.%N)
echo "restore exit $st, whole restored run $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s (includes the rest of the run)"
grep -E 'driver-ckpt|restart:|restore: (load|read|done|total)' "$d/rest.err" | head -12 | sed 's/^/  /'
rm -rf "$d"
