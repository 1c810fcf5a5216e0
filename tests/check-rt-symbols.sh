#!/bin/sh
# check-rt-symbols.sh OBJ... - freestanding code calls nothing but itself.
#
# The *_rt.c files run where libc must not be entered: in signal handlers, in
# the frozen snapshot, in raw threads with another thread's TLS, in the
# restore loader (STYLE.md). The compiler can still call libc behind their
# back (a struct copy becomes memcpy(), a new flag brings in a helper), so
# every symbol their objects leave undefined must be defined by one of them,
# or be one of the few data symbols below, which they only read. Run by the
# build; fails, naming the object and the symbol.
set -u
# the linker's; glibc's rseq area (read once, weak); what interpose_sysv.c notes
allowed=" _GLOBAL_OFFSET_TABLE_ __rseq_offset __rseq_size sc_sysv_calls sc_sysv_noted "
defined=$(nm --defined-only "$@" | awk 'NF == 3 { print " " $3 " " }' | sort -u | tr -d '\n')
bad=0
for obj in "$@"; do
	for sym in $(nm -u "$obj" | awk '{ print $2 }'); do
		case "$allowed$defined" in
		*" $sym "*) ;;
		*)
			echo "freestanding code uses a symbol outside itself: $obj needs $sym" >&2
			bad=1
			;;
		esac
	done
done
exit $bad
