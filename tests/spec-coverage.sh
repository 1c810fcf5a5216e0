#!/bin/sh
# SPDX-License-Identifier: MIT
#
# spec-coverage.sh [SPEC [TESTS]] - fail when a requirement of the image format
# specification (default spec/image-format.md) is cited by no test (the C sources under
# TESTS, default tests/). Run by the test spec::every_requirement_is_cited_by_a_test.
#
# A requirement is an ID in brackets at the start of a line of the spec, [R-XXX-n]; a
# test cites it by naming it (R-XXX-n, not followed by another digit), usually in the
# comment above the test that proves it. A requirement whose line says it is withdrawn
# needs no test. Prints every requirement no test cites, and how many are cited.
set -eu

spec=${1:-spec/image-format.md}
tests=${2:-tests}
[ -r "$spec" ] || { echo "spec-coverage: cannot read $spec" >&2; exit 2; }
[ -d "$tests" ] || { echo "spec-coverage: no directory $tests" >&2; exit 2; }

cited=$(mktemp)
trap 'rm -f "$cited"' EXIT INT TERM
find "$tests" -name '*.c' -exec grep -ohE 'R-[A-Z]+-[0-9]+' {} + | sort -u > "$cited"

total=0
missing=0
req='^\[R-[A-Z]+-[0-9]+\]'
for id in $(grep -E "$req" "$spec" | grep -viE "$req[^.]*withdrawn" | grep -oE "$req" |
	    tr -d '[]' | sort -u); do
	total=$((total + 1))
	if ! grep -qx "$id" "$cited"; then
		echo "spec-coverage: $id ($spec) is cited by no test under $tests/" >&2
		missing=$((missing + 1))
	fi
done
[ "$total" -gt 0 ] || { echo "spec-coverage: no requirement found in $spec" >&2; exit 2; }
echo "spec-coverage: $((total - missing)) of $total requirements cited by a test"
[ "$missing" -eq 0 ]
