# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/collectd/run.sh and tests/bench/collectd_packs.sh: writes DIR/collectd.conf
# for Debian's collectd in the foreground, Interval 1, the cpu, memory and load plugins
# and write_fwdsink into DIR/spool for the receiver on PORT; each further argument is
# one more line of the write_fwdsink block (a Property, SealRows, SealInterval).
# Usage: collectd_conf DIR PORT [LINE...]                          @ref LLP 0026#collectd
collectd_conf() {
  local dir=$1 port=$2 line
  shift 2
  {
    cat <<CONF
Hostname "fwdsink-test"
FQDNLookup false
Interval 1
BaseDir "$dir/base"
PIDFile "$dir/collectd.pid"
PluginDir "$dir/plugins"
TypesDB "/usr/share/collectd/types.db"
LoadPlugin logfile
<Plugin logfile>
  LogLevel "info"
  File "$dir/collectd.log"
  Timestamp true
</Plugin>
LoadPlugin cpu
LoadPlugin memory
LoadPlugin load
LoadPlugin write_fwdsink
<Plugin write_fwdsink>
  Property "spool_dir" "$dir/spool"
  Property "url" "http://127.0.0.1:$port/ingest"
CONF
    for line in "$@"; do echo "  $line"; done
    echo "</Plugin>"
  } >"$dir/collectd.conf"
}
