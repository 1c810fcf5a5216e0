#!/bin/sh
# check-layering.sh ROOT 'MODULE=SEEN...'... - every #include "..." of the
# modules follows the layering.
#
# Each rule names a module (a folder under ROOT) and the modules whose headers
# its files may include. A file, or an included path, belongs to the first
# rule whose folder holds it, so the more specific folders come first
# (cuda/lib before cuda, core/restore before core). A bare name is a header
# of the file's own folder or an installed one (core/include/): open to all.
# Prints each include that breaks a rule as FILE:LINE and fails. The build
# runs it before compiling anything, with the Makefile's SEES.* rules.
set -u
root=$1
shift
cd "$root" || exit 2
folders=$(for rule in "$@"; do d=${rule%%=*}; [ -d "$d" ] && echo "$d"; done)
[ -n "$folders" ] || exit 0
# FILE:LINE:TEXT of every include of a path with a folder in it
find $folders -name '*.[chS]' | sort -u |
	xargs grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' /dev/null |
	awk -v rules="$(printf '%s\n' "$@")" '
	BEGIN {
		n = split(rules, r, "\n")
		for (i = 1; i <= n; i++) {
			mod[i] = substr(r[i], 1, index(r[i], "=") - 1)
			sees[i] = " " substr(r[i], index(r[i], "=") + 1) " "
		}
	}
	function owner(path,   i) {
		for (i = 1; i <= n; i++)
			if (index(path, mod[i] "/") == 1)
				return i
		return 0
	}
	{
		split($0, f, ":")
		inc = $0
		sub(/^[^"]*"/, "", inc)
		sub(/".*$/, "", inc)
		me = owner(f[1])
		them = owner(inc)
		if (!them || index(sees[me], " " mod[them] " ") == 0) {
			printf "%s:%s: includes \"%s\"; %s may include only from:%s\n",
			       f[1], f[2], inc, mod[me], sees[me] > "/dev/stderr"
			bad = 1
		}
	}
	END {
		if (bad)
			print "the layering (Makefile, SEES.*) is broken by the includes above" > "/dev/stderr"
		exit bad
	}'
