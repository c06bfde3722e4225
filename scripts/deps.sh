#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, with apt-get, whatever Debian packages fwdsink needs to build, test and
# run its demo, and nothing that is already there. Used by both README commands and
# by .ci/run. Needs root (or sudo) on Debian 12.
set -euo pipefail

PKGS=(
  g++ cmake make pkg-config            # toolchain
  libcpp-httplib-dev                   # HTTP/HTTPS client and the reference receiver
  nlohmann-json3-dev                   # JSON: error bodies, stats
  libsimdjson-dev                      # the reference receiver's row checks (fast enough for figure 9z)
  libtomlplusplus-dev                  # toml++: the daemon's --config file (header-only use)
  libssl-dev openssl                   # TLS, and the CLI the TLS tests use to make certificates
  libzstd-dev zstd                     # compression (library; CLI for the benchmark baseline)
  zlib1g-dev                           # gzip Content-Encoding
  clickhouse-server clickhouse-client  # the real-engine tests (LABEL engines) and benchmark
  zookeeper default-jre-headless       # the replicated ClickHouse cluster test (LABEL cluster)
  doctest-dev                          # tests
  curl                                 # demo and benchmark baseline
  clang-format                         # the format check in .ci/run (scripts/format.sh)
  time jq strace                       # the benchmark harness (its smoke run is in ctest)
  nginx-light                          # benchmark figure 10 (limit_req); the failover test behind a load balancer (ctest -L lb)
  haproxy lighttpd caddy               # real fronts before the receiver (ctest -L fronts, LLP 0014#fault-proxy)
  libsystemd-dev                       # sd_notify for the daemon (Type=notify, watchdog)
  python3-prometheus-client            # the /metrics test parses the page with its parser
  prometheus                           # promtool and a real Prometheus: the alert rules' tests (LABEL prometheus)
  gnuplot-nox                          # the benchmark plots (tests/bench/run.sh --plot DIR)
  clang libfuzzer-14-dev               # the libFuzzer targets (scripts/test.sh --fuzz)
  abigail-tools                        # the C API's ABI check (abidw/abidiff, LABEL abi)
  collectd-core collectd-dev           # the collectd write plugin and its test (LABEL collectd)
  dpkg-dev lintian adduser             # the .deb packages (scripts/package.sh) and their test (deb_packages)
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
