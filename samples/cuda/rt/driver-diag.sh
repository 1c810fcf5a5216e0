#!/bin/sh
# driver-diag.sh - stands in for selfckpt-driver-ckpt (SELFCKPT_DRIVER_CKPT):
# says on standard error what the target process holds (descriptors with
# their fdinfo, threads, the driver's unix socket), runs the real tool, and
# says it again. For driver-probe.sh.
#   SELFCKPT_DRIVER_REAL=BUILD/bin/selfckpt-driver-ckpt driver-diag.sh PID ACTION [MS]
p=$1
show() {
	echo "== process $p, $1"
	for f in /proc/$p/fd/*; do
		n=${f##*/}
		printf '  fd %s -> %s | %s\n' "$n" "$(readlink "$f")" \
			"$(grep -v '^mnt_id\|^ino' /proc/$p/fdinfo/$n | tr '\n' ' ' | tr -s '\t ' ' ')"
	done
	echo "  threads: $(for t in /proc/$p/task/*; do printf '%s:%s ' "${t##*/}" "$(cat $t/comm)"; done)"
	echo "  sockets: $(grep -a cuda /proc/net/unix | tr '\n' ' ')"
	echo "  maps: $(grep -c nvidia /proc/$p/maps) nvidia, $(grep -c 'dev/zero' /proc/$p/maps) /dev/zero"
} >&2
show "before $2"
"$SELFCKPT_DRIVER_REAL" "$@"
st=$?
show "after $2 (exit $st)"
exit $st
