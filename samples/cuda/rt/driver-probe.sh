#!/bin/sh
# driver-probe.sh - what the CUDA driver's process checkpoint allows, measured
# on a GPU machine with the Runtime API samples (make cuda-rt-samples):
#   1. the driver's checkpoint of a running program, asked by another process
#      (selfckpt-driver-ckpt), each call timed, and what the process holds then
#   2. the same asked by the process itself, from a thread (selfcall)
#   3. selfckpt-run in the driver-assisted mode: SIGUSR2, the program goes on;
#      the image restored, with its ids and with new ids
#
#   sh samples/cuda/rt/driver-probe.sh BUILD
set -u
b=$(cd "$1" && pwd) || exit 2
bin=$b/samples/cuda
tool=$b/bin/selfckpt-driver-ckpt
t=$(mktemp -d /tmp/sc-probe-XXXXXX)
iters=${PROBE_ITERS:-30}
export SELFCKPT_LOG_LEVEL=debug

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
row() { printf '%-44s %s\n' "$1" "$2"; }
lines() { n=$(grep -c '^iter ' "$1" 2> /dev/null); echo "${n:-0}"; }
wait_lines() { # FILE N
	i=0
	while [ "$(lines "$1")" -lt "$2" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
}

for p in rtloop rtloop-shared; do
	timeout 120 "$bin/$p" --iters $iters > "$t/$p.ref" 2> "$t/$p.referr"
	row "$p: reference run" "exit $? ($(lines "$t/$p.ref") iters)"
done

if [ "${PROBE_PARTS:-123}" != 3 ]; then
# 1. another process checkpoints and restores a running rtloop
"$bin/rtloop" --iters $iters --sleep-ms 100 > "$t/ext.out" 2> "$t/ext.err" &
pid=$!
wait_lines "$t/ext.out" 3
for a in state lock state save state; do
	r=$(timeout 60 "$tool" $pid $a 10000 2>&1 | tr '\n' ' ')
	row "ext: $a" "$r"
done
row "ext: nvidia fds after save" "$(ls -l /proc/$pid/fd 2> /dev/null | grep -c /dev/nvidia)"
row "ext: nvidia maps after save" "$(grep -c /dev/nvidia /proc/$pid/maps)"
row "ext: fds after save" "$(ls -l /proc/$pid/fd | awk 'NR>1{print $NF}' | sed 's/:.*//' | sort | uniq -c | tr '\n' ' ')"
row "ext: threads after save" "$(cat /proc/$pid/task/*/comm | tr '\n' ' ')"
row "ext: restore thread id" "$(timeout 60 "$tool" $pid tid 2>&1 | tr '\n' ' ')"
for a in restore unlock state; do
	r=$(timeout 60 "$tool" $pid $a 2>&1 | tr '\n' ' ')
	row "ext: $a" "$r"
done
wait $pid
row "ext: program exit" "$? $(cmp -s "$t/ext.out" "$t/rtloop.ref" && echo same-as-ref || echo DIFFERS)"

# 2. the process asks for its own checkpoint
timeout 60 "$bin/selfcall" > "$t/self.out" 2>&1
row "self: exit" "$?"
sed 's/^/    /' "$t/self.out"

fi

# 3. selfckpt-run, driver-assisted mode
if [ -n "${PROBE_DIAG:-}" ]; then
	export SELFCKPT_DRIVER_REAL=$tool SELFCKPT_DRIVER_CKPT=$b/driver-diag.sh
	cp "$(dirname "$0")/driver-diag.sh" "$b/driver-diag.sh" && chmod +x "$b/driver-diag.sh"
fi
for p in ${PROBE_RUN:-rtloop rtloop-shared}; do
	d=$t/run-$p
	mkdir -p "$d"
	"$b/bin/selfckpt-run" --dir "$d" -- "$bin/$p" --iters $iters --sleep-ms 100 \
		> "$d/run.out" 2> "$d/run.err" &
	pid=$!
	wait_lines "$d/run.out" 5
	kill -USR2 $pid
	wait $pid
	row "$p run: exit, image" "$? $(ls "$d" | grep -c sckpt) $(cmp -s "$d/run.out" "$t/$p.ref" && echo same-as-ref || echo DIFFERS)"
	grep -E 'driver|error|warn|checkpoint:' "$d/run.err" | head -12 | sed 's/^/    /'
	[ -n "${PROBE_DIAG:-}" ] && grep -E '^(==|  )' "$d/run.err" > "${OUT:-$d}/diag-run-$p"
	for ids in same new; do
		[ $ids = new ] && export SELFCKPT_NEW_IDS=1
		timeout 60 "$b/bin/selfckpt-restore" "$d/latest" > "$d/rest-$ids.out" 2> "$d/rest-$ids.err"
		st=$?
		unset SELFCKPT_NEW_IDS
		n=$(head -1 "$d/rest-$ids.out" | awk '{print $2}')
		ok=DIFFERS
		[ -n "$n" ] && tail -n "+$n" "$t/$p.ref" | cmp -s - "$d/rest-$ids.out" && ok=same-as-ref
		row "$p restore ($ids ids)" "exit $st from iter ${n:-none} $ok"
		grep -Ev '^selfckpt: debug: (restore|checkpoint): (read|load|stag|check|map)' "$d/rest-$ids.err" | grep -v '^==\|^  ' | tail -8 | sed 's/^/    /'
		[ -n "${PROBE_DIAG:-}" ] && grep -E '^(==|  )' "$d/rest-$ids.err" > "${OUT:-$d}/diag-$p-$ids"
	done
done
rm -rf "$t"
