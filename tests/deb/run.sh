#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages, end to end on this machine (ctest deb_packages, LABEL package):
# makes them from BUILD_DIR with cpack (the tree ctest runs in: no second compile),
# checks their Depends and conffiles (and lintian, when installed), installs them with
# dpkg -i, checks --version, the fwdsink user, the folders, the unit, the conffile and
# the man page against the installed binary's --help, forwards a partition from
# /var/lib/fwdsink/spool to fwdsink-central as the fwdsink user with the unit's own
# command line, upgrades over itself keeping a changed conffile, removes and purges.
# Whatever happens, the exit trap purges the packages and removes the user.
#
# Usage: run.sh BUILD_DIR SCRATCH_DIR plain|sanitized
# Exit 77 (skipped): the sanitizer build (ASan binaries do not belong in packages), not
# root, no dpkg/cpack, or fwdsink already installed here (never touched). @ref LLP 0001#deb-test
set -euo pipefail
build=$1 scratch=$2 mode=$3
skip() { echo "deb test: skipped: $*"; exit 77; }
fail() { echo "deb test: FAIL: $*" >&2; exit 1; }
step() { echo "deb test: [${SECONDS}s] $*"; }

[[ $mode == plain ]] || skip "sanitizer build"
[[ $(id -u) == 0 ]] || skip "needs root (dpkg -i)"
command -v dpkg >/dev/null && command -v cpack >/dev/null || skip "no dpkg or cpack"
command -v dpkg-shlibdeps >/dev/null || skip "no dpkg-shlibdeps (dpkg-dev)"

PKGS=(fwdsink fwdsink-central libfwdsink0 libfwdsink-dev)
# One run at a time on this machine (other worktrees, CI): the packages, the user and
# /var/lib/fwdsink are machine-wide.
exec 9>/run/lock/fwdsink-deb-test.lock
flock -w 600 9 || fail "another deb_packages run holds /run/lock/fwdsink-deb-test.lock"
installed() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^.[ic]'; }
# What this test installed, for cleanup(): written before dpkg -i, removed after the
# purge. Found at the start, it means a run was killed (a ctest timeout sends SIGKILL,
# which no trap sees): that run's leftovers are ours to remove.
marker=/run/lock/fwdsink-deb-test.installed
purge_ours() {
  local left=()
  for p in "${PKGS[@]}"; do installed "$p" && left+=("$p"); done
  ((${#left[@]} == 0)) || dpkg -P "${left[@]}" >/dev/null 2>&1 || true
  if getent passwd fwdsink >/dev/null; then deluser --system --quiet fwdsink >/dev/null 2>&1; fi
  if getent group fwdsink >/dev/null; then delgroup --system --quiet fwdsink >/dev/null 2>&1; fi
  rm -rf /var/lib/fwdsink /etc/fwdsink /etc/default/fwdsink
  rm -f "$marker"
}
if [[ -e $marker ]]; then
  echo "deb test: removing what a killed run left ($(cat "$marker"))"
  purge_ours
fi
for p in "${PKGS[@]}"; do
  ! installed "$p" || skip "$p is installed on this machine; not touching it"
done
! getent passwd fwdsink >/dev/null || skip "a fwdsink user exists on this machine"
[[ ! -e /var/lib/fwdsink && ! -e /etc/fwdsink ]] || skip "/var/lib/fwdsink or /etc/fwdsink exists"

central_pid=
cleanup() {
  local rc=$?
  [[ -n $central_pid ]] && kill "$central_pid" 2>/dev/null
  [[ -e $marker ]] && purge_ours
  ((rc == 0)) || echo "deb test: cleaned up after the failure" >&2
  exit $rc
}
trap cleanup EXIT

rm -rf "$scratch" && mkdir -p "$scratch"/{pkg,central}
step "cpack from $build"
cmake --build "$build" --target fwdsink-deb-files >"$scratch/build.log" 2>&1 ||
  { cat "$scratch/build.log"; fail "fwdsink-deb-files did not build"; }
(cd "$build" && cpack -G DEB -B "$scratch/pkg" >"$scratch/cpack.log" 2>&1) ||
  { cat "$scratch/cpack.log"; fail "cpack failed"; }
debs=()
for p in "${PKGS[@]}"; do
  f=$(ls "$scratch/pkg/${p}"_*.deb 2>/dev/null | head -1)
  [[ -n $f ]] || fail "no ${p}_*.deb"
  debs+=("$f")
done
field() { dpkg-deb -f "$1" "$2"; }
deb_of() { ls "$scratch/pkg/$1"_*.deb; }

# Depends found from the binaries (dpkg-shlibdeps), plus what the scripts need.
for want in libc6 libssl3 libstdc++6 adduser; do
  field "$(deb_of fwdsink)" Depends | grep -q "$want" || fail "fwdsink Depends lacks $want"
done
for want in libc6 libssl3 libzstd1; do
  field "$(deb_of libfwdsink0)" Depends | grep -q "$want" || fail "libfwdsink0 Depends lacks $want"
done
field "$(deb_of libfwdsink-dev)" Depends | grep -q "libfwdsink0 (= " ||
  fail "libfwdsink-dev does not depend on its libfwdsink0"
conffiles=$(dpkg-deb --ctrl-tarfile "$(deb_of fwdsink)" | tar -xO ./conffiles)
for f in /etc/fwdsink/fwdsink.toml /etc/default/fwdsink; do
  grep -qx "$f" <<<"$conffiles" || fail "$f is not a conffile"
done
if [[ ${DEB_TEST_LINTIAN:-1} == 1 ]] && command -v lintian >/dev/null; then
  step "lintian"
  lintian --fail-on error "${debs[@]}" >"$scratch/lintian.log" 2>&1 ||
    { cat "$scratch/lintian.log"; fail "lintian reports errors"; }
  grep -E '^[EW]:' "$scratch/lintian.log" || true
fi

step "dpkg -i"
echo "pid $$, $(date -u +%FT%TZ)" >"$marker"
dpkg -i "${debs[@]}" </dev/null >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -i"; }
for b in fwdsink fwdsink-central; do
  /usr/bin/$b --version | grep -q "^$b [0-9]" || fail "/usr/bin/$b --version"
done
grep -q 'libfwdsink.so.0 ' <<<"$(ldconfig -p)" || fail "libfwdsink.so.0 not in the ld.so cache"
[[ $(pkg-config --modversion fwdsink) == "$(/usr/bin/fwdsink --version | sed -n '1s/.* //p')" ]] ||
  fail "pkg-config fwdsink"
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd fwdsink) || fail "no fwdsink user"
((uid < 1000)) || fail "fwdsink is not a system user (uid $uid)"
[[ $home == /var/lib/fwdsink && $shell == */nologin ]] || fail "fwdsink: home $home, shell $shell"
getent group fwdsink >/dev/null || fail "no fwdsink group"
for d in /var/lib/fwdsink /var/lib/fwdsink/spool; do
  [[ $(stat -c %U:%G:%a "$d") == fwdsink:fwdsink:770 ]] || fail "$d is $(stat -c %U:%G:%a "$d")"
done
rules=/usr/share/fwdsink/prometheus/fwdsink-alerts.yml
[[ -f $rules ]] || fail "no $rules"
if command -v promtool >/dev/null; then
  promtool check rules "$rules" >"$scratch/promtool.log" 2>&1 ||
    { cat "$scratch/promtool.log"; fail "promtool check rules $rules"; }
fi
unit=/lib/systemd/system/fwdsink.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ $exec_start == "/usr/bin/fwdsink forward --config /etc/fwdsink/fwdsink.toml \$FWDSINK_ARGS" ]] ||
  fail "ExecStart is '$exec_start'"
! grep -q /usr/local "$unit" || fail "the unit names /usr/local"
grep -qx 'EnvironmentFile=-/etc/default/fwdsink' "$unit" || fail "no EnvironmentFile"
grep -qx 'User=fwdsink' "$unit" || fail "no User=fwdsink"

# The man page and the conffile against the installed binary's --help/--print-config.
man=$(zcat /usr/share/man/man1/fwdsink.1.gz | sed 's/\\-/-/g; s/\\f[BIR]//g; s/^\.B //')
grep -q 'listen' <<<"$(zcat /usr/share/man/man1/fwdsink-central.1.gz)" || fail "fwdsink-central(1)"
help=$(/usr/bin/fwdsink forward --help)
keys=$(/usr/bin/fwdsink forward --print-config --spool /x --url http://h/ |
  sed -n 's/^# \([a-z_]*\) (unset)$/\1/p; s/^\([a-z_]*\) = .*/\1/p')
[[ $(wc -w <<<"$keys") -gt 30 ]] || fail "--print-config listed $(wc -w <<<"$keys") keys"
toml=/etc/fwdsink/fwdsink.toml
for k in $keys; do
  flag=--${k//_/-} env=FWDSINK_${k^^}
  grep -q -- "^$flag\( \|$\)" <<<"$man" || fail "fwdsink(1) lacks $flag"
  grep -qx -- "$env" <<<"$man" || fail "fwdsink(1) lacks $env"
  grep -q -- "^$k\( = .*\)\?$" <<<"$man" || fail "fwdsink(1) lacks the key $k"
  grep -Eq "^#?$k = " "$toml" || fail "$toml lacks $k"
done
for code in $(sed -n 's/^  \([0-9][0-9]*\)  *.*/\1/p' <<<"$help") 64 74; do
  grep -qx -- "$code" <<<"$man" || fail "fwdsink(1) lacks exit code $code"
done
for sig in SIGINT SIGTERM SIGHUP; do
  sed -n '/^\.SH SIGNALS/,/^\.SH/p' <<<"$man" | grep -q "$sig" || fail "fwdsink(1) lacks $sig"
done
# Every key that has a default, uncommented as the file shows it: the file still loads
# and gives the same values, now from the file.
cp "$toml" "$scratch/all-keys.toml"
for k in $(/usr/bin/fwdsink forward --print-config --spool /x --url http://h/ |
           sed -n 's/^\([a-z_]*\) = .*# default$/\1/p'); do
  sed -i "s/^#$k = /$k = /" "$scratch/all-keys.toml"
done
values() { /usr/bin/fwdsink forward --config "$1" --url http://h/ --print-config | sed 's/  *#.*//'; }
out=$(values "$toml") || fail "the shipped $toml does not load: $out"
all=$(values "$scratch/all-keys.toml") || fail "$toml with its defaults uncommented: $all"
[[ $out == "$all" ]] || fail "$toml: a commented default differs: $(diff <(echo "$out") <(echo "$all"))"
n=$(/usr/bin/fwdsink forward --config "$scratch/all-keys.toml" --url http://h/ --print-config |
  grep -c "# file $scratch/all-keys.toml:" || true)
((n > 25)) || fail "only $n keys came from the uncommented file"
out=$(/usr/bin/fwdsink forward --config "$toml" --url http://h/ --print-config)
grep -q '^spool = "/var/lib/fwdsink/spool" *# file '"$toml:" <<<"$out" || fail "spool not from $toml"

step "forward a partition from the spool as the fwdsink user"
/usr/bin/fwdsink-central --listen 127.0.0.1:0 --out "$scratch/central" \
  --port-file "$scratch/port" >"$scratch/central.log" 2>&1 &
central_pid=$!
for _ in $(seq 200); do [[ -s $scratch/port ]] && break; sleep 0.05; done
[[ -s $scratch/port ]] || fail "fwdsink-central did not listen"
rows=$(runuser -u fwdsink -- /usr/bin/fwdsink generate --spool /var/lib/fwdsink/spool \
  --bytes 64k --partitions 2)
((rows > 0)) || fail "generate wrote no rows"
cat >>/etc/default/fwdsink <<EOF
FWDSINK_URL=http://127.0.0.1:$(cat "$scratch/port")/ingest
FWDSINK_ARGS="--once --log-json"
EOF
# The unit's command line with the unit's environment: EnvironmentFile=, then $FWDSINK_ARGS.
env_args=()
while IFS= read -r line; do
  [[ $line =~ ^[A-Z_]+= ]] && env_args+=("$(sed 's/^\([A-Z_]*\)="\(.*\)"$/\1=\2/' <<<"$line")")
done </etc/default/fwdsink
args=$(sed -n 's/^FWDSINK_ARGS="\(.*\)"$/\1/p' /etc/default/fwdsink)
# shellcheck disable=SC2086 # split like systemd splits $FWDSINK_ARGS
runuser -u fwdsink -- env -i PATH=/usr/bin:/bin "${env_args[@]}" \
  ${exec_start//\$FWDSINK_ARGS/$args} >"$scratch/daemon.out" 2>"$scratch/daemon.err" ||
  { cat "$scratch/daemon.err"; fail "the unit's command exited $?"; }
! grep -q warning "$scratch/daemon.err" || { cat "$scratch/daemon.err"; fail "warnings"; }
got=$(wc -l <"$scratch/central/received.ndjson")
((got == rows)) || fail "fwdsink-central stored $got rows of $rows"
[[ -z $(ls /var/lib/fwdsink/spool/ready) ]] || fail "ready/ not empty after --once"
[[ $(stat -c %U /var/lib/fwdsink/spool/ready) == fwdsink ]] || fail "ready/ not the user's"

step "upgrade over itself, a changed conffile kept"
echo '# changed by deb_packages' >>"$toml"
dpkg -i "$(deb_of fwdsink)" </dev/null >"$scratch/dpkg.log" 2>&1 ||
  { cat "$scratch/dpkg.log"; fail "dpkg -i over itself"; }
grep -qx '# changed by deb_packages' "$toml" || fail "the upgrade lost the change to $toml"
grep -q '^FWDSINK_URL=' /etc/default/fwdsink || fail "the upgrade lost /etc/default/fwdsink"
[[ $(stat -c %U /var/lib/fwdsink/spool) == fwdsink ]] || fail "spool owner after the upgrade"
[[ -d /var/lib/fwdsink/spool/ready ]] || fail "the upgrade lost the spool"

step "remove: configuration, spool and user stay"
dpkg -r "${PKGS[@]}" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -r"; }
[[ ! -e /usr/bin/fwdsink && ! -e /usr/bin/fwdsink-central && ! -e $unit ]] || fail "files left by dpkg -r"
[[ -f $toml && -d /var/lib/fwdsink/spool/ready ]] || fail "dpkg -r removed the conffile or the spool"
getent passwd fwdsink >/dev/null || fail "dpkg -r removed the user"

step "purge: nothing left"
dpkg -P "${PKGS[@]}" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -P"; }
for p in "${PKGS[@]}"; do ! installed "$p" || fail "$p still known to dpkg"; done
for f in /etc/fwdsink /etc/default/fwdsink /var/lib/fwdsink /usr/share/fwdsink; do
  [[ ! -e $f ]] || fail "$f left by the purge"
done
! getent passwd fwdsink >/dev/null || fail "the purge left the fwdsink user"
! getent group fwdsink >/dev/null || fail "the purge left the fwdsink group"
rm -f "$marker"
echo "deb test: ok (${#debs[@]} packages, $rows rows forwarded)"
