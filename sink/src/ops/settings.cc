// SPDX-License-Identifier: Apache-2.0
// The settings table and Settings::Set/Build/Describe. @ref LLP 0024
//
// Each row pairs the public SettingInfo with an `apply` function that parses one value
// into a SinkSettings. Set() checks a value by applying it to a scratch SinkSettings
// (so a bad value is reported where it was given, with its source), and Build()
// applies every held value to a fresh one in table order. To add a key: add one row
// here (and, if the field is in DriverOptions, a line in kFieldKeys below).
#include "fwdsink/settings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "fwdsink/codec.h"
#include "fwdsink/http_header.h"
#include "fwdsink/telemetry.h"
#include "fwdsink/transport.h"
#include "io/http_rules.h"
#include "ops/setting_shapes.h"

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

// Parses one value into `s`; an error is kInvalidArgument with the bare problem
// ("'4x' is not a byte count ..."): the caller adds where and the key.
using Apply = Status (*)(std::string_view value, SinkSettings& s);
// Rewrites a value for Describe() (secrets); nullptr: shown as given.
using Redact = std::string (*)(std::string_view value);

struct Row {
  SettingInfo info;
  Apply apply;
  Redact redact = nullptr;
};

using namespace setting_shapes;  // NOLINT: the table is written in its shapes

// ---- the table: one row per key, in --help order. @ref LLP 0024#table
// clang-format off
const Row kRows[] = {
  {{"spool", "DIR", "spool directory (required)"},
   [](std::string_view v, SinkSettings& s) { return Text(v, s.driver.spool_dir); }},
  // @ref LLP 0019 — the first url is the primary, each later one a fallback.
  {{"url", "URL", "ingest endpoint, http:// or https:// (required); repeat for fallbacks", true,
    true},
   [](std::string_view v, SinkSettings& s) {
     auto& f = s.driver.forward;
     if (f.url.empty()) return Text(v, f.url);
     std::string fallback;
     if (Status e = Text(v, fallback); !e.ok()) return e;
     f.fallback_urls.push_back(std::move(fallback));
     return OkStatus();
   }, RedactUrlValue},
  {{"failover_after", "S", "leave an endpoint whose next wait is longer than S",
    false, false, false, false, "30"},
   [](std::string_view v, SinkSettings& s) {
     return PositiveDuration(v, s.driver.forward.failover.failover_after);
   }},
  {{"failover_failures", "N", "leave it after N failures in a row (transport errors, 5xx)",
    false, false, false, false, "2"},
   [](std::string_view v, SinkSettings& s) {
     return Count(v, s.driver.forward.failover.failures_to_leave, 1);
   }},
  {{"failback_after", "S", "probe the primary and take it back no sooner than S after leaving it",
    false, false, false, false, "60"},
   [](std::string_view v, SinkSettings& s) {
     return PositiveDuration(v, s.driver.forward.failover.failback_after);
   }},
  {{"once", "", "one pass over the ready partitions, then exit (exit codes below)",
    false, false, true, true, "false"},
   [](std::string_view v, SinkSettings& s) { return Switch(v, s.daemon.once); }},
  {{"token_file", "F", "bearer token file, read on first use, after a 401 and on SIGHUP"},
   [](std::string_view v, SinkSettings& s) { return Text(v, s.token_file); }},
  {{"chunk_bytes", "N", "target chunk size before compression", false, false, false, false, "1m"},
   [](std::string_view v, SinkSettings& s) {
     std::uint64_t n = 0;
     if (Status e = PositiveSize(v, n); !e.ok()) return e;
     auto& c = s.driver.forward.chunker;
     c.chunk_bytes = static_cast<std::size_t>(n);
     // A single line may be as long as a chunk; keep the default line limit otherwise.
     c.max_line_bytes = std::max(c.max_line_bytes, c.chunk_bytes);
     return OkStatus();
   }},
  {{"compression", "C", "zstd, gzip or identity (no Content-Encoding header)",
    false, false, false, false, "zstd"},
   [](std::string_view v, SinkSettings& s) {
     const auto codec = ParseCompression(std::string(v));
     if (!codec) return Bad(Quoted(v) + " is not zstd, gzip or identity");
     s.driver.forward.compression = *codec;
     return OkStatus();
   }},
  {{"zstd_level", "N", "zstd level", false, false, false, false, "1"},
   [](std::string_view v, SinkSettings& s) {
     std::uint64_t n = 0;
     if (Status e = Count(v, n, 1); !e.ok()) return e;
     if (n > 100) return Bad("is out of range");
     s.driver.forward.zstd_level = static_cast<int>(n);
     return OkStatus();
   }},
  {{"ladder", "LIST", "waits without Retry-After, e.g. 30,60,120,300",
    false, false, false, false, "30,60,120,300"},
   [](std::string_view v, SinkSettings& s) { return Ladder(v, s.driver.forward.backpressure.ladder); }},
  {{"max_wait", "S", "longest single wait, also caps Retry-After", false, false, false, false, "300"},
   [](std::string_view v, SinkSettings& s) {
     return PositiveDuration(v, s.driver.forward.backpressure.max_wait);
   }},
  {{"inline_budget", "S", "time per chunk before respooling the partition",
    false, false, false, false, "300"},
   [](std::string_view v, SinkSettings& s) {
     return PositiveDuration(v, s.driver.forward.backpressure.inline_budget);
   }},
  {{"jitter", "F", "jitter fraction in [0,1) of ladder waits and pauses; 0 = off",
    false, false, false, false, "0.5"},
   [](std::string_view v, SinkSettings& s) { return Jitter(v, s.driver.forward.backpressure.jitter); }},
  {{"pacing", "auto|off", "pace requests to the rate the server advertises or that is learned",
    false, false, false, false, "auto"},
   [](std::string_view v, SinkSettings& s) {
     if (v != "auto" && v != "off") return Bad(Quoted(v) + " is not auto or off");
     s.driver.forward.pacing.enabled = v == "auto";
     return OkStatus();
   }},
  // @ref LLP 0018#flags
  {{"concurrency", "M", "requests sent at once: adaptive, or a fixed N (1: one in flight)",
    false, false, false, false, "adaptive"},
   [](std::string_view v, SinkSettings& s) {
     auto& p = s.driver.concurrency;
     if (v == "adaptive") {
       p.adaptive = true;
       return OkStatus();
     }
     std::uint64_t n = 0;
     if (Status e = Count(v, n, 1); !e.ok() || n > 1024) {
       return Bad(Quoted(v) + " is not adaptive or a number 1..1024");
     }
     p.adaptive = false;
     p.max = static_cast<std::size_t>(n);
     return OkStatus();
   }},
  {{"max_concurrency", "N", "ceiling of the adaptive limit (requests in flight)",
    false, false, false, false, "32"},
   [](std::string_view v, SinkSettings& s) {
     std::uint64_t n = 0;
     if (Status e = Count(v, n, 1); !e.ok()) return e;
     if (n > 1024) return Bad("is out of range (1..1024)");
     // A fixed --concurrency N is its own limit (applied first: table order).
     if (s.driver.concurrency.adaptive) s.driver.concurrency.max = static_cast<std::size_t>(n);
     return OkStatus();
   }},
  // @ref LLP 0027 — packs of small partitions.
  {{"pack_below", "N|auto", "pack ready partitions under N bytes into one request (auto: half of chunk_bytes; 0: off)",
    false, false, false, false, "auto"},
   [](std::string_view v, SinkSettings& s) {
     const auto n = v == "auto" ? std::optional<std::uint64_t>() : ParseSize(v);
     if (v != "auto" && !n) return Bad(Quoted(v) + " is not auto or " + SizeProblem(v));
     s.driver.pack_below = n;
     return OkStatus();
   }},
  {{"pack_linger", "S", "wait up to S for more small partitions before a pack that is not full",
    false, false, false, false, "0"},
   [](std::string_view v, SinkSettings& s) {
     const auto d = ParseDuration(v);
     if (!d || *d < milliseconds::zero()) return Bad(Quoted(v) + " is not a duration (e.g. 0, 5s)");
     s.driver.pack_linger = *d;
     return OkStatus();
   }},
  {{"horizon", "S", "dead-letter a partition failing this long", false, false, false, false, "24h"},
   [](std::string_view v, SinkSettings& s) { return PositiveDuration(v, s.driver.horizon); }},
  {{"poll", "S", "idle poll interval between passes", false, false, false, false, "1"},
   [](std::string_view v, SinkSettings& s) {
     return PositiveDuration(v, s.driver.tick_pauses.front());
   }},
  {{"label", "NAME", "label in events and logs", false, false, false, false, "fwdsink"},
   [](std::string_view v, SinkSettings& s) { return Text(v, s.driver.forward.label); }},
  {{"key_header", "NAME", "idempotency header", false, false, false, false, "Idempotency-Key"},
   [](std::string_view v, SinkSettings& s) { return Text(v, s.driver.forward.idempotency_header); }},
  {{"ca_file", "F", "CA bundle for https (default: the system store)"},
   [](std::string_view v, SinkSettings& s) { return Text(v, s.driver.forward.transport.ca_file); }},
  {{"connect_timeout", "S", "TCP/TLS connect timeout", false, false, false, false, "5"},
   [](std::string_view v, SinkSettings& s) {
     return PositiveDuration(v, s.driver.forward.transport.connect_timeout);
   }},
  {{"read_timeout", "S", "read/write stall timeout", false, false, false, false, "30"},
   [](std::string_view v, SinkSettings& s) {
     auto& t = s.driver.forward.transport;
     if (Status e = PositiveDuration(v, t.read_timeout); !e.ok()) return e;
     t.write_timeout = t.read_timeout;
     return OkStatus();
   }},
  {{"header", "'N: V'", "extra request header (repeatable; never logged)", true, true},
   Header, RedactHeader},
  {{"header_file", "'N: F'", "header whose value is the content of file F (re-read on SIGHUP)",
    false, true},
   [](std::string_view v, SinkSettings& s) { return HeaderFile(v, s.request); }},
  {{"basic_auth_file", "F", "HTTP Basic auth from F (\"user:password\"); not with token_file"},
   [](std::string_view v, SinkSettings& s) { return Text(v, s.request.basic_auth_file); }},
  {{"client_cert", "F", "client certificate (PEM) for mutual TLS; needs client_key"},
   [](std::string_view v, SinkSettings& s) {
     return Text(v, s.driver.forward.transport.client_cert_file);
   }},
  {{"client_key", "F", "its private key (PEM)"},
   [](std::string_view v, SinkSettings& s) {
     return Text(v, s.driver.forward.transport.client_key_file);
   }},
  {{"proxy", "URL", "http:// proxy (default from https_proxy/http_proxy unless no_proxy)", true},
   [](std::string_view v, SinkSettings& s) { return Text(v, s.request.proxy); }, RedactUrlValue},
  {{"key_param", "NAME", "also put the chunk's key in the URL query as NAME=KEY"},
   [](std::string_view v, SinkSettings& s) {
     return Text(v, s.driver.forward.idempotency_query_param);
   }},
  {{"no_key_header", "", "send the key only in the query (needs key_param)",
    false, false, false, true, "false"},
   [](std::string_view v, SinkSettings& s) {
     s.driver.forward.send_idempotency_header = v != "true";
     return OkStatus();
   }},
  {{"profile", "P", "response rules: generic or clickhouse", false, false, false, false, "generic"},
   [](std::string_view v, SinkSettings& s) {
     const auto p = ParseEngineProfile(v);
     if (!p) return Bad(Quoted(v) + " is not generic or clickhouse");
     s.driver.forward.responses.profile = *p;
     return OkStatus();
   }},
  // @ref LLP 0017#dedup-window
  {{"fleet_insert_rate", "R", "inserts/s the whole fleet makes into the table (clickhouse dedup check)",
    false, false, true, false, "10"},
   [](std::string_view v, SinkSettings& s) {
     double r = -1;
     if (Status e = Jitter(v, r); !e.ok()) return e;  // any number
     if (!(r > 0)) return Bad("must be positive");
     s.daemon.fleet_insert_rate = r;
     return OkStatus();
   }},
  {{"retry_status", "LIST", "statuses retried in place besides 429/503",
    false, false, false, false, "408,425,5xx"},
   [](std::string_view v, SinkSettings& s) { return RetryStatuses(v, s.driver.forward.responses); }},
  {{"min_throughput", "N", "slowest transfer accepted, bytes/s", false, false, false, false, "32k"},
   [](std::string_view v, SinkSettings& s) {
     return PositiveSize(v, s.driver.forward.transport.min_throughput_bytes_per_s);
   }},
  {{"response_timeout", "S", "response headers due this long after the upload allowance",
    false, false, false, false, "30"},
   [](std::string_view v, SinkSettings& s) {
     return PositiveDuration(v, s.driver.forward.transport.response_timeout);
   }},
  // @ref LLP 0014#threads
  {{"keep_alive", "S", "idle connections (and their threads) closed after this long; 0: kept",
    false, false, false, false, "30"},
   [](std::string_view v, SinkSettings& s) {
     const auto d = ParseDuration(v);
     if (!d) return Bad(Quoted(v) + " is not a duration (e.g. 30, 1.5s, 250ms, 5m)");
     if (*d < milliseconds::zero()) return Bad("must not be negative");
     s.driver.forward.transport.keep_alive = *d;
     return OkStatus();
   }},
  // @ref LLP 0017#expect-continue
  {{"expect_continue_bytes", "N|always",
    "bodies of N bytes or more wait for 100 Continue while a refusal is likely (0: never; "
    "always: every body of 64k or more)",
    false, false, false, false, "64k"},
   [](std::string_view v, SinkSettings& s) {
     ForwardOptions& f = s.driver.forward;
     if (v == "always") {  // the rule before issue 39
       f.expect_continue = ExpectContinue::kAlways;
       f.transport.expect_continue_bytes = TransportOptions{}.expect_continue_bytes;
       return OkStatus();
     }
     const auto n = ParseSize(v);
     if (!n) return Bad(Quoted(v) + " is not always or " + SizeProblem(v));
     f.expect_continue = ExpectContinue::kWhenLikely;
     f.transport.expect_continue_bytes = *n;
     return OkStatus();
   }},
  // @ref LLP 0014#window
  {{"window", "N", "chunks of one partition in flight at once (1: in order at the server)",
    false, false, false, false, "16"},
   [](std::string_view v, SinkSettings& s) {
     std::uint64_t n = 0;
     if (Status e = Count(v, n, 1); !e.ok()) return e;
     if (n > ForwardOptions::kMaxWindow) return Bad("is out of range (1..64)");
     s.driver.forward.window = static_cast<std::size_t>(n);
     return OkStatus();
   }},
  {{"max_inflight_bytes", "N", "bodies in flight together, bytes (a new request waits)",
    false, false, false, false, "32m"},
   [](std::string_view v, SinkSettings& s) {
     return PositiveSize(v, s.driver.forward.max_inflight_bytes);
   }},
  {{"max_split_requests", "N", "requests one partition's bisection may spend",
    false, false, false, false, "256"},
   [](std::string_view v, SinkSettings& s) { return Count(v, s.driver.forward.max_split_requests, 1); }},
  {{"log_json", "", "JSON log lines on stderr even on a terminal", false, false, true, true, "false"},
   [](std::string_view v, SinkSettings& s) {
     if (v == "true") s.daemon.log_mode = LogMode::kJson;
     return OkStatus();
   }},
  {{"progress", "", "progress line on stderr even when not a terminal",
    false, false, true, true, "false"},
   [](std::string_view v, SinkSettings& s) {
     if (v == "true") s.daemon.log_mode = LogMode::kProgress;
     return OkStatus();
   }},
  {{"log_file", "F", "also append the JSON log lines to F (reopened on SIGHUP)",
    false, false, true},
   [](std::string_view v, SinkSettings& s) { return Text(v, s.daemon.log_file); }},
  {{"log_level", "L", "least severe JSON log line written: debug, info, warn or error",
    false, false, true, false, "info"},
   [](std::string_view v, SinkSettings& s) {
     const auto level = ParseLogLevel(v);
     if (!level) return Bad(Quoted(v) + " is not debug, info, warn or error");
     s.daemon.log_level = *level;
     return OkStatus();
   }},
  {{"stats_interval", "S", "period of the JSON stats line", false, false, true, false, "10"},
   [](std::string_view v, SinkSettings& s) { return PositiveDuration(v, s.daemon.stats_interval); }},
  // @ref LLP 0025#metrics, LLP 0025#caps
  {{"metrics_listen", "A:P", "serve /metrics (Prometheus), /healthz and /readyz on A:P (off)",
    false, false, true},
   [](std::string_view v, SinkSettings& s) {
     if (!ParseListenAddress(v)) return Bad(Quoted(v) + " is not HOST:PORT (e.g. 127.0.0.1:9464)");
     s.daemon.metrics_listen = std::string(v);
     return OkStatus();
   }},
  {{"max_dead_bytes", "N", "delete the oldest dead letters while dead/ holds more"},
   [](std::string_view v, SinkSettings& s) {
     std::uint64_t n = 0;
     if (Status e = PositiveSize(v, n); !e.ok()) return e;
     s.driver.dead_caps.max_bytes = n;
     return OkStatus();
   }},
  {{"max_dead_age", "S", "delete dead letters dead longer than S (e.g. 168h)"},
   [](std::string_view v, SinkSettings& s) {
     std::chrono::milliseconds d{0};
     if (Status e = PositiveDuration(v, d); !e.ok()) return e;
     s.driver.dead_caps.max_age = d;
     return OkStatus();
   }},
};
// clang-format on

const Row* FindRow(std::string_view key) {
  for (const Row& r : kRows) {
    if (r.info.key == key) return &r;
  }
  return nullptr;
}

// DriverOptions fields -> keys, longest prefix first ("forward.backpressure.ladder[1]"
// must hit the ladder entry).
constexpr std::pair<std::string_view, std::string_view> kFieldKeys[] = {
    {"spool_dir", "spool"},
    {"horizon", "horizon"},
    {"tick_pauses", "poll"},
    {"forward.url", "url"},
    {"forward.fallback_urls", "url"},
    {"forward.failover.failover_after", "failover_after"},
    {"forward.failover.failback_after", "failback_after"},
    {"forward.failover.failures_to_leave", "failover_failures"},
    {"concurrency.max", "max_concurrency"},
    {"concurrency", "concurrency"},
    {"pack_linger", "pack_linger"},
    {"pack_below", "pack_below"},
    {"dead_caps.max_age", "max_dead_age"},
    {"dead_caps.max_bytes", "max_dead_bytes"},
    {"forward.idempotency_header", "key_header"},
    {"forward.zstd_level", "zstd_level"},
    {"forward.chunker", "chunk_bytes"},
    {"forward.backpressure.ladder", "ladder"},
    {"forward.backpressure.max_wait", "max_wait"},
    {"forward.backpressure.inline_budget", "inline_budget"},
    {"forward.backpressure.jitter", "jitter"},
    {"forward.transport.connect_timeout", "connect_timeout"},
    {"forward.transport.read_timeout", "read_timeout"},
    {"forward.transport.write_timeout", "read_timeout"},
    {"forward.transport.client_cert_file", "client_cert"},
    {"forward.transport.client_key_file", "client_key"},
    {"forward.transport.proxy", "proxy"},
    {"forward.transport.min_throughput_bytes_per_s", "min_throughput"},
    {"forward.transport.response_timeout", "response_timeout"},
    {"forward.transport.keep_alive", "keep_alive"},
    {"forward.transport.expect_continue_bytes", "expect_continue_bytes"},
    {"forward.max_split_requests", "max_split_requests"},
    {"forward.window", "window"},
    {"forward.max_inflight_bytes", "max_inflight_bytes"},
    {"forward.transport", "ca_file"},
    {"forward.label", "label"},
    {"forward.headers", "header"},
    {"forward.basic_auth", "basic_auth_file"},
    {"forward.idempotency_query_param", "key_param"},
    {"forward.send_idempotency_header", "no_key_header"},
    {"forward.responses", "retry_status"},
};

int Rank(SettingSource s) {
  switch (s) {
    case SettingSource::kDefault: return 0;
    case SettingSource::kFile: return 1;
    case SettingSource::kEnvironment: return 2;
    case SettingSource::kFlag:
    case SettingSource::kApi: return 3;
  }
  return 0;
}

// "<where>: <key>: <problem>"; a flag already spells the key: "--chunk-bytes: <problem>".
std::string Located(std::string_view where, SettingSource source, std::string_view key,
                    std::string_view problem) {
  if (source == SettingSource::kFlag) return std::string(where) + ": " + std::string(problem);
  return std::string(where) + ": " + std::string(key) + ": " + std::string(problem);
}

// Switch spellings -> "true"/"false"; nullopt for anything else.
std::optional<std::string_view> SwitchValue(std::string_view v) {
  if (v.empty() || v == "true" || v == "1") return "true";
  if (v == "false" || v == "0") return "false";
  return std::nullopt;
}

}  // namespace

std::string_view to_string(SettingSource source) {
  switch (source) {
    case SettingSource::kDefault: return "default";
    case SettingSource::kFile: return "file";
    case SettingSource::kEnvironment: return "environment";
    case SettingSource::kFlag: return "flag";
    case SettingSource::kApi: return "api";
  }
  return "?";
}

std::span<const SettingInfo> SettingTable() {
  static const std::vector<SettingInfo> table = [] {
    std::vector<SettingInfo> t;
    for (const Row& r : kRows) t.push_back(r.info);
    return t;
  }();
  return table;
}

const SettingInfo* FindSetting(std::string_view key) {
  const Row* r = FindRow(key);
  return r ? &SettingTable()[static_cast<std::size_t>(r - kRows)] : nullptr;
}

std::string FlagForKey(std::string_view key) {
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string KeyForFlag(std::string_view flag) {
  if (!flag.starts_with("--") || flag.find('_') != std::string_view::npos) return {};
  std::string key(flag.substr(2));
  std::replace(key.begin(), key.end(), '-', '_');
  return FindRow(key) ? key : std::string();
}

std::string EnvironmentVariableForKey(std::string_view key) {
  std::string name = "FWDSINK_";
  for (char c : key) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::string KeyForField(std::string_view field) {
  for (const auto& [prefix, key] : kFieldKeys) {
    if (field.starts_with(prefix)) return std::string(key);
  }
  return {};
}

Settings::Settings() = default;

Status Settings::Set(std::string_view key, std::string_view value, SettingSource source,
                     std::string where) {
  const Row* row = FindRow(key);
  if (!row) {
    return Status(StatusCode::kNotFound, where + ": unknown key '" + std::string(key) + "'",
                  std::string(key));
  }
  std::string v(value);
  if (row->info.is_switch) {
    const auto sw = SwitchValue(value);
    if (!sw) {
      return Status(StatusCode::kInvalidArgument,
                    Located(where, source, key, Quoted(value) + " is not true, false, 1 or 0"),
                    std::string(key));
    }
    v = *sw;
  }
  SinkSettings scratch;
  if (Status e = row->apply(v, scratch); !e.ok()) {
    return Status(StatusCode::kInvalidArgument, Located(where, source, key, e.message()),
                  std::string(key));
  }
  Held& held = held_[std::string(key)];
  if (!held.values.empty() && Rank(source) < Rank(held.source)) return OkStatus();
  if (held.values.empty() || Rank(source) > Rank(held.source) || !row->info.repeatable) {
    held.values.clear();
  }
  held.values.push_back(std::move(v));
  held.source = source;
  held.where = std::move(where);
  return OkStatus();
}

namespace {

// Where a key's value came from, for an error found by Build().
std::string WhereOf(const std::map<std::string, std::string, std::less<>>& where,
                    std::string_view key, std::string_view problem) {
  const auto it = where.find(key);
  if (it == where.end()) {
    const SettingInfo* info = FindSetting(key);
    const std::string def = info && !info->default_value.empty()
                                ? " (default " + std::string(info->default_value) + ")"
                                : " (default)";
    return std::string(key) + def + ": " + std::string(problem);
  }
  return it->second + ": " + std::string(problem);
}

}  // namespace

Result<SinkSettings> Settings::Build() const {
  SinkSettings s;
  // key -> the located prefix of an error about it ("--url", "f.toml:3: url").
  std::map<std::string, std::string, std::less<>> where;
  for (const Row& row : kRows) {
    const auto it = held_.find(row.info.key);
    if (it == held_.end()) continue;
    const Held& h = it->second;
    where[std::string(row.info.key)] =
        h.source == SettingSource::kFlag ? h.where : h.where + ": " + std::string(row.info.key);
    for (const std::string& v : h.values) {
      if (Status e = row.apply(v, s); !e.ok()) {
        return Status::Config(std::string(row.info.key), WhereOf(where, row.info.key, e.message()));
      }
    }
  }
  for (std::string_view key : {"spool", "url"}) {
    if (held_.find(key) == held_.end()) {
      return Status::Config(std::string(key), FlagForKey(key) + ": is required (or " +
                                                  EnvironmentVariableForKey(key) + ", or " +
                                                  std::string(key) + " in the config file)");
    }
  }
  auto on = [this](std::string_view key) {
    const auto it = held_.find(key);
    return it != held_.end() && !it->second.values.empty() && it->second.values.back() == "true";
  };
  if (on("log_json") && on("progress")) {
    return Status::Config("progress",
                          WhereOf(where, "progress", "cannot be combined with log_json"));
  }
  if (s.request.basic_auth_file && s.token_file) {
    return Status::Config("basic_auth_file",
                          WhereOf(where, "basic_auth_file", "cannot be combined with token_file"));
  }
  if (Status e = Validate(s.driver); !e.ok()) {
    const std::string key = KeyForField(e.field());
    const std::string problem = e.message() + " (" + e.field() + ")";
    if (key.empty()) return Status::Config(e.field(), "config " + problem);
    return Status::Config(key, WhereOf(where, key, problem));
  }
  return s;
}

std::vector<Settings::Effective> Settings::Describe() const {
  std::vector<Effective> out;
  for (const Row& row : kRows) {
    const std::string key(row.info.key);
    const auto it = held_.find(row.info.key);
    if (it == held_.end()) {
      out.push_back({key, std::string(row.info.default_value), SettingSource::kDefault, "default"});
      continue;
    }
    for (const std::string& v : it->second.values) {
      out.push_back({key, row.redact ? row.redact(v) : v, it->second.source, it->second.where});
    }
  }
  return out;
}

}  // namespace fwdsink
