#!/bin/sh
# make-view.sh VIEW FOLDER... - the tree as one module may see it.
#
# VIEW becomes a folder that holds, at their own paths, links to the FOLDERs
# of the source tree that the module may include (the Makefile's SEES.*):
# compiled with -IVIEW and without -I., a file that includes "cuda/lib/x.h"
# where its module may not builds no further than that line. Links are
# relative, so a build folder moved together with the tree still works.
set -eu
view=$1
shift
for folder in "$@"; do
	mkdir -p "$view/$(dirname "$folder")"
	ln -s "$(realpath --relative-to="$view/$(dirname "$folder")" "$folder")" "$view/$folder"
done
