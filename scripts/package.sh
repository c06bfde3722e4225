#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's package command: installs what is missing (scripts/deps.sh: the build
# dependencies, dpkg-dev, lintian, adduser), configures build-deb/ (prefix /usr, no tests;
# RelWithDebInfo and -Werror as in CI, stripped by cpack), builds the binaries and the
# generated package files, and leaves
#   build-deb/fwdsink_*.deb  fwdsink-central_*.deb  libfwdsink0_*.deb  libfwdsink-dev_*.deb
# then runs lintian on them and fails on an error (the warnings that remain are listed
# in LLP 0001#lintian). On a fresh Debian 12 machine as root it needs nothing else.
#
#   scripts/package.sh [--build-dir DIR] [--no-lintian]
#
# The ctest `deb_packages` (LABEL package) makes the packages from its own build tree
# with the same cpack step (tests/deb/run.sh). @ref LLP 0001#deb
set -euo pipefail
cd "$(dirname "$0")/.."

builddir=build-deb
lint=1
while (($#)); do
  case "$1" in
    --build-dir) builddir=$2; shift ;;
    --no-lintian) lint=0 ;;
    *) echo "package.sh: unknown argument '$1' (use --build-dir DIR, --no-lintian)" >&2; exit 64 ;;
  esac
  shift
done

bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$builddir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
      -DFWDSINK_TESTS=OFF -DFWDSINK_WERROR=ON >/dev/null
cmake --build "$builddir" -j "$jobs" --target fwdsink-daemon fwdsink-central fwdsink_shared \
      fwdsink-deb-files
rm -f "$builddir"/*.deb
(cd "$builddir" && cpack -G DEB >/dev/null)
ls -1 "$builddir"/*.deb
if ((lint)); then
  # --fail-on error: warnings are listed, errors fail the script.
  lintian --fail-on error \
          "$builddir"/*.deb
fi
