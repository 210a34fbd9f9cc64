#!/bin/sh
# check.sh verifies that this copy of gVisor is what update.sh builds:
# upstream at the pinned version plus exactly the patches in patches/. It
# rebuilds a copy in a temporary directory and compares; it changes nothing
# here. make test runs it, so an edit to the copy that is not a patch fails.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
version=$(sed -n 's/^VERSION=//p' "$here/update.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Fetch the pinned module outside any module (update.sh would ask from
# inside gVisor's own go.mod).
(cd "$tmp" && go mod download "gvisor.dev/gvisor@$version")
mkdir "$tmp/copy"
cp -r "$here/update.sh" "$here/patches" "$tmp/copy/"
sh "$tmp/copy/update.sh" >/dev/null
for f in pkg go.mod LICENSE; do
	if ! diff -r "$tmp/copy/$f" "$here/$f" >"$tmp/diff"; then
		echo "third_party/gvisor/$f is not upstream $version plus patches/ (update.sh):" >&2
		head -40 "$tmp/diff" >&2
		exit 1
	fi
done
echo "third_party/gvisor: upstream $version plus $(ls "$here/patches" | wc -l) patch(es)"
