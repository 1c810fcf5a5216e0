#!/bin/sh
# Make sure the headers and tools selfckpt builds with are present.
#   setup-deps.sh build   what the library and tools need
#   setup-deps.sh test    that, plus what the test suite needs
# With SELFCKPT_DEPS_INSTALL=1 (the set-up of `make test` and `make demo`), as
# root on Debian, the missing packages are installed with apt-get; otherwise
# the command to run is printed and the script fails.
set -u
what=${1:-build}
cc=${CC:-cc}
missing=""

has_header() {
	printf '#include <%s>\n' "$1" | $cc -E -x c - >/dev/null 2>&1
}

need_header() { has_header "$1" || missing="$missing $2"; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }

need_header zstd.h libzstd-dev
need_header xxhash.h libxxhash-dev
need_header libelf.h libelf-dev
need_cmd pkg-config pkg-config
if [ "$what" = test ]; then
	need_header criterion/criterion.h libcriterion-dev
	need_cmd bc bc
	need_cmd python3 python3
fi

[ -z "$missing" ] && exit 0

if [ "${SELFCKPT_DEPS_INSTALL:-0}" = 1 ] && [ "$(id -u)" = 0 ] &&
	command -v apt-get >/dev/null 2>&1; then
	echo "selfckpt: installing missing packages:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null && apt-get install -y -qq $missing >/dev/null && exit 0
	echo "selfckpt: apt-get install$missing failed" >&2
	exit 1
fi
if [ "${SELFCKPT_DEPS_INSTALL:-0}" = 1 ]; then
	echo "selfckpt: missing build dependencies; run as root:" >&2
else
	echo "selfckpt: missing build dependencies ('make test' installs them, as root); or run:" >&2
fi
echo "    apt-get install$missing" >&2
exit 1
