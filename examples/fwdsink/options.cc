#include "options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <span>

#include "fwdsink/codec.h"
#include "fwdsink/status.h"
#include "listen.h"

namespace fwdsink_cli {
namespace {

using std::chrono::milliseconds;

// A flag handler returns OK, or kInvalidArgument whose message says what is wrong.
using Handler = std::function<fwdsink::Status(const std::string& value)>;

fwdsink::Status Bad(std::string message) {
  return fwdsink::Status(fwdsink::StatusCode::kInvalidArgument, std::move(message));
}

struct Flag {
  std::string_view name;
  bool takes_value = true;
  Handler handle;
};

// Walks args against `flags`. "--flag value" and "--flag=value" both work. Arguments
// that do not start with '-' are positionals (an error when `positionals` is null).
std::optional<UsageError> ParseFlags(const std::vector<std::string>& args,
                                     std::span<const Flag> flags,
                                     std::vector<std::string>* positionals) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.empty() || arg[0] != '-' || arg == "-") {
      if (!positionals) return UsageError{arg, "unexpected argument"};
      positionals->push_back(arg);
      continue;
    }
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const Flag* flag = nullptr;
    for (const Flag& f : flags) {
      if (f.name == name) flag = &f;
    }
    if (!flag) return UsageError{name, "unknown option (see --help)"};
    std::string value;
    if (flag->takes_value) {
      if (inline_value) {
        value = *inline_value;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return UsageError{name, "needs a value"};
      }
    } else if (inline_value) {
      return UsageError{name, "takes no value"};
    }
    if (const fwdsink::Status problem = flag->handle(value); !problem.ok()) {
      return UsageError{name, problem.message()};
    }
  }
  return std::nullopt;
}

// Handlers for the common value shapes.
Handler PositiveSize(std::uint64_t& out) {
  return [&out](const std::string& v) -> fwdsink::Status {
    const auto n = ParseSize(v);
    if (!n) return Bad("'" + v + "' is not a byte count (digits with an optional k/m/g)");
    if (*n == 0) return Bad("must be greater than 0");
    out = *n;
    return fwdsink::OkStatus();
  };
}

Handler Count(std::uint64_t& out, std::uint64_t min) {
  return [&out, min](const std::string& v) -> fwdsink::Status {
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc{} || end != v.data() + v.size() || v.empty()) {
      return Bad("'" + v + "' is not a non-negative integer");
    }
    if (n < min) return Bad("must be at least " + std::to_string(min));
    out = n;
    return fwdsink::OkStatus();
  };
}

Handler PositiveDuration(milliseconds& out) {
  return [&out](const std::string& v) -> fwdsink::Status {
    const auto d = ParseDuration(v);
    if (!d) return Bad("'" + v + "' is not a duration (e.g. 30, 1.5s, 250ms, 5m)");
    if (*d <= milliseconds::zero()) return Bad("must be positive");
    out = *d;
    return fwdsink::OkStatus();
  };
}

Handler Text(std::string& out) {
  return [&out](const std::string& v) -> fwdsink::Status {
    if (v.empty()) return Bad("must not be empty");
    out = v;
    return fwdsink::OkStatus();
  };
}

Handler Path(std::filesystem::path& out) {
  return [&out](const std::string& v) -> fwdsink::Status {
    if (v.empty()) return Bad("must name a path");
    out = v;
    return fwdsink::OkStatus();
  };
}

Handler Set(bool& out) {
  return [&out](const std::string&) -> fwdsink::Status {
    out = true;
    return fwdsink::OkStatus();
  };
}

// Handlers of the ops flags (@ref LLP 0025).
Handler Listen(std::optional<std::string>& out) {
  return [&out](const std::string& v) -> fwdsink::Status {
    if (!ParseListen(v)) return Bad("'" + v + "' is not HOST:PORT (e.g. 127.0.0.1:9464)");
    out = v;
    return fwdsink::OkStatus();
  };
}

Handler OptionalSize(std::optional<std::uint64_t>& out) {
  return [&out](const std::string& v) -> fwdsink::Status {
    std::uint64_t n = 0;
    if (auto bad = PositiveSize(n)(v); !bad.ok()) return bad;
    out = n;
    return fwdsink::OkStatus();
  };
}

Handler OptionalDuration(std::optional<milliseconds>& out) {
  return [&out](const std::string& v) -> fwdsink::Status {
    milliseconds d{0};
    if (auto bad = PositiveDuration(d)(v); !bad.ok()) return bad;
    out = d;
    return fwdsink::OkStatus();
  };
}

fwdsink::Result<std::vector<milliseconds>> ParseLadder(const std::string& v) {
  std::vector<milliseconds> rungs;
  std::size_t start = 0;
  for (;;) {
    const auto comma = v.find(',', start);
    const std::string item = v.substr(start, comma - start);
    const auto d = ParseDuration(item);
    if (!d || *d <= milliseconds::zero()) {
      return Bad("rung " + std::to_string(rungs.size() + 1) + " ('" + item +
                 "') is not a positive duration; expected e.g. 30,60,120,300");
    }
    rungs.push_back(*d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return rungs;
}

// The request flags that need more than a Handler. @ref LLP 0017#request-options
struct RequestFlagValues {
  std::filesystem::path basic_auth_file;
  std::string proxy;
  bool no_key_header = false;
  std::string profile;
  std::string retry_status;
};

Handler AppendHeader(fwdsink::HeaderList& out) {
  return [&out](const std::string& v) -> fwdsink::Status {
    auto header = ParseHeaderFlag(v, "--header");
    if (!header.ok()) return Bad(header.status().message());
    out.push_back(std::move(*header));
    return fwdsink::OkStatus();
  };
}

Handler AppendHeaderFile(std::vector<std::pair<std::string, std::filesystem::path>>& out) {
  return [&out](const std::string& v) -> fwdsink::Status {
    const auto colon = v.find(':');
    std::string path = colon == std::string::npos ? std::string() : v.substr(colon + 1);
    path.erase(0, path.find_first_not_of(" \t"));
    if (colon == std::string::npos || path.empty()) return Bad("expected 'Name: /path/to/file'");
    const std::string name = v.substr(0, colon);
    // The name is checked now; the value when the file is read, at start.
    if (fwdsink::Status e = fwdsink::ValidateHeaderField(name, "", "--header-file"); !e.ok()) {
      return Bad(e.message());
    }
    out.emplace_back(name, path);
    return fwdsink::OkStatus();
  };
}

// Parses "408,425,500,502,504"; "5xx" stands for every 5xx.
std::optional<UsageError> ParseRetryStatuses(const std::string& v, fwdsink::ResponseRules& rules) {
  rules.retry_statuses.clear();
  rules.retry_all_5xx = false;
  std::size_t start = 0;
  for (;;) {
    const auto comma = v.find(',', start);
    const std::string item = v.substr(start, comma - start);
    int n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item == "5xx") {
      rules.retry_all_5xx = true;
    } else if (item.empty() || ec != std::errc{} || end != item.data() + item.size()) {
      return UsageError{"--retry-status", "'" + item + "' is not a status (e.g. 408,425,5xx)"};
    } else {
      rules.retry_statuses.push_back(n);
    }
    if (comma == std::string::npos) return std::nullopt;
    start = comma + 1;
  }
}

std::optional<UsageError> ApplyRequestFlags(const RequestFlagValues& r,
                                            const std::filesystem::path& token_file,
                                            ForwardConfig& c) {
  fwdsink::ForwardOptions& f = c.driver.forward;
  if (!r.basic_auth_file.empty()) {
    if (!token_file.empty()) {
      return UsageError{"--basic-auth-file", "cannot be combined with --token-file"};
    }
    c.request.basic_auth_file = r.basic_auth_file;
  }
  if (!r.proxy.empty()) c.request.proxy = r.proxy;
  f.send_idempotency_header = !r.no_key_header;
  if (!r.profile.empty()) {
    const auto profile = fwdsink::ParseEngineProfile(r.profile);
    if (!profile)
      return UsageError{"--profile", "'" + r.profile + "' is not generic or clickhouse"};
    f.responses.profile = *profile;
  }
  if (!r.retry_status.empty()) return ParseRetryStatuses(r.retry_status, f.responses);
  return std::nullopt;
}

}  // namespace

std::string UsageError::Text() const {
  return "fwdsink: " + (option.empty() ? std::string() : option + ": ") + message;
}

std::optional<milliseconds> ParseDuration(std::string_view text) {
  std::size_t unit_at = 0;
  while (unit_at < text.size() &&
         ((text[unit_at] >= '0' && text[unit_at] <= '9') || text[unit_at] == '.')) {
    ++unit_at;
  }
  const std::string_view number = text.substr(0, unit_at);
  const std::string_view unit = text.substr(unit_at);
  if (number.empty() || number.find_first_of("0123456789") == std::string_view::npos) {
    return std::nullopt;
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc{} || end != number.data() + number.size()) return std::nullopt;
  double scale = 1000;  // seconds by default
  if (unit == "ms")
    scale = 1;
  else if (unit == "m")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  else if (!unit.empty() && unit != "s")
    return std::nullopt;
  const double ms = std::round(value * scale);
  // Fail closed on NaN and on values that do not fit. @ref LLP 0022#options
  if (!std::isfinite(ms) || ms < 0 ||
      ms > static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2)) {
    return std::nullopt;
  }
  return milliseconds{static_cast<std::int64_t>(ms)};
}

std::optional<std::uint64_t> ParseSize(std::string_view text) {
  std::uint64_t shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k':
      case 'K': shift = 10; break;
      case 'm':
      case 'M': shift = 20; break;
      case 'g':
      case 'G': shift = 30; break;
      default: break;
    }
    if (shift) text.remove_suffix(1);
  }
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  if (n > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return n << shift;
}

std::string OptionForField(std::string_view field) {
  // Longest prefix first: "forward.backpressure.ladder[1]" must hit the ladder entry.
  static constexpr std::pair<std::string_view, std::string_view> kMap[] = {
      {"spool_dir", "--spool"},
      {"horizon", "--horizon"},
      {"tick_pauses", "--poll"},
      {"forward.url", "--url"},
      {"forward.idempotency_header", "--key-header"},
      {"forward.zstd_level", "--zstd-level"},
      {"forward.chunker", "--chunk-bytes"},
      {"forward.backpressure.ladder", "--ladder"},
      {"forward.backpressure.max_wait", "--max-wait"},
      {"forward.backpressure.inline_budget", "--inline-budget"},
      {"forward.backpressure.jitter", "--jitter"},
      {"forward.transport.connect_timeout", "--connect-timeout"},
      {"forward.transport.read_timeout", "--read-timeout"},
      {"forward.transport.write_timeout", "--read-timeout"},
      {"forward.transport.client_cert_file", "--client-cert"},
      {"forward.transport.client_key_file", "--client-key"},
      {"forward.transport.proxy", "--proxy"},
      {"forward.transport.min_throughput_bytes_per_s", "--min-throughput"},
      {"forward.transport.response_timeout", "--response-timeout"},
      {"forward.max_split_requests", "--max-split-requests"},
      {"forward.transport", "--ca-file"},
      {"forward.label", "--label"},
      {"forward.headers", "--header"},
      {"forward.basic_auth", "--basic-auth-file"},
      {"forward.idempotency_query_param", "--key-param"},
      {"forward.send_idempotency_header", "--no-key-header"},
      {"forward.responses", "--retry-status"},
      {"dead_caps.max_age", "--max-dead-age"},
  };
  for (const auto& [prefix, option] : kMap) {
    if (field.starts_with(prefix)) return std::string(option);
  }
  return "config " + std::string(field);
}

Parsed<ForwardConfig> ParseForward(const std::vector<std::string>& args) {
  ForwardConfig c;
  fwdsink::DriverOptions& d = c.driver;
  fwdsink::ForwardOptions& f = d.forward;
  std::string compression = "zstd";
  std::string ladder;
  std::uint64_t chunk_bytes = f.chunker.chunk_bytes;
  std::uint64_t zstd_level = static_cast<std::uint64_t>(fwdsink::kDefaultZstdLevel);
  milliseconds poll = d.tick_pauses.front();
  milliseconds timeout = f.transport.read_timeout;
  milliseconds connect_timeout = f.transport.connect_timeout;
  std::uint64_t min_throughput = f.transport.min_throughput_bytes_per_s;
  std::string jitter;
  std::string pacing = "auto";
  bool log_json = false, progress = false;
  std::filesystem::path token_file, log_file;
  RequestFlagValues request;
  const Flag flags[] = {
      {"--spool", true, Path(d.spool_dir)},
      {"--url", true, Text(f.url)},
      {"--once", false, Set(c.once)},
      {"--token-file", true, Path(token_file)},
      {"--chunk-bytes", true, PositiveSize(chunk_bytes)},
      {"--compression", true, Text(compression)},
      {"--zstd-level", true, Count(zstd_level, 1)},
      {"--ladder", true, Text(ladder)},
      {"--inline-budget", true, PositiveDuration(f.backpressure.inline_budget)},
      {"--max-wait", true, PositiveDuration(f.backpressure.max_wait)},
      {"--jitter", true, Text(jitter)},
      {"--pacing", true, Text(pacing)},
      {"--horizon", true, PositiveDuration(d.horizon)},
      {"--poll", true, PositiveDuration(poll)},
      {"--label", true, Text(f.label)},
      {"--key-header", true, Text(f.idempotency_header)},
      {"--ca-file", true, Text(f.transport.ca_file)},
      {"--connect-timeout", true, PositiveDuration(connect_timeout)},
      {"--read-timeout", true, PositiveDuration(timeout)},
      // @ref LLP 0023#deadlines
      {"--min-throughput", true, PositiveSize(min_throughput)},
      {"--response-timeout", true, PositiveDuration(f.transport.response_timeout)},
      {"--max-split-requests", true, Count(f.max_split_requests, 1)},
      {"--log-json", false, Set(log_json)},
      {"--progress", false, Set(progress)},
      {"--log-file", true, Path(log_file)},
      {"--stats-interval", true, PositiveDuration(c.stats_interval)},
      {"--help", false, Set(c.help)},
      {"-h", false, Set(c.help)},
      // @ref LLP 0017#request-options
      {"--header", true, AppendHeader(f.headers)},
      {"--header-file", true, AppendHeaderFile(c.request.header_files)},
      {"--basic-auth-file", true, Path(request.basic_auth_file)},
      {"--client-cert", true, Text(f.transport.client_cert_file)},
      {"--client-key", true, Text(f.transport.client_key_file)},
      {"--proxy", true, Text(request.proxy)},
      {"--key-param", true, Text(f.idempotency_query_param)},
      {"--no-key-header", false, Set(request.no_key_header)},
      {"--profile", true, Text(request.profile)},
      {"--retry-status", true, Text(request.retry_status)},
      // @ref LLP 0025#metrics, LLP 0025#caps
      {"--metrics-listen", true, Listen(c.metrics_listen)},
      {"--max-dead-bytes", true, OptionalSize(d.dead_caps.max_bytes)},
      {"--max-dead-age", true, OptionalDuration(d.dead_caps.max_age)},
  };
  if (auto e = ParseFlags(args, flags, nullptr)) return {std::nullopt, *e};
  if (c.help) return {c, {}};
  if (auto e = ApplyRequestFlags(request, token_file, c)) return {std::nullopt, *e};

  if (d.spool_dir.empty()) return {std::nullopt, {"--spool", "is required"}};
  if (f.url.empty()) return {std::nullopt, {"--url", "is required"}};
  if (log_json && progress) {
    return {std::nullopt, {"--progress", "cannot be combined with --log-json"}};
  }
  c.log_mode = log_json ? LogMode::kJson : progress ? LogMode::kProgress : LogMode::kAuto;
  if (!token_file.empty()) c.token_file = token_file;
  if (!log_file.empty()) c.log_file = log_file;

  const auto codec = fwdsink::ParseCompression(compression);
  if (!codec) {
    return {std::nullopt, {"--compression", "'" + compression + "' is not zstd, gzip or identity"}};
  }
  f.compression = *codec;
  if (zstd_level > 100) return {std::nullopt, {"--zstd-level", "is out of range"}};
  f.zstd_level = static_cast<int>(zstd_level);
  if (!ladder.empty()) {
    auto rungs = ParseLadder(ladder);
    if (!rungs.ok()) return {std::nullopt, {"--ladder", rungs.status().message()}};
    f.backpressure.ladder = std::move(*rungs);
  }
  if (!jitter.empty()) {
    double j = -1;
    const auto [end, ec] = std::from_chars(jitter.data(), jitter.data() + jitter.size(), j);
    if (ec != std::errc{} || end != jitter.data() + jitter.size()) {
      return {std::nullopt, {"--jitter", "'" + jitter + "' is not a number"}};
    }
    f.backpressure.jitter = j;
  }
  // @ref LLP 0016#pacer
  if (pacing != "auto" && pacing != "off") {
    return {std::nullopt, {"--pacing", "'" + pacing + "' is not auto or off"}};
  }
  f.pacing.enabled = pacing == "auto";
  f.chunker.chunk_bytes = static_cast<std::size_t>(chunk_bytes);
  // A single line may be as long as a chunk; keep the default line limit otherwise.
  f.chunker.max_line_bytes = std::max(f.chunker.max_line_bytes, f.chunker.chunk_bytes);
  f.transport.read_timeout = timeout;
  f.transport.write_timeout = timeout;
  f.transport.connect_timeout = connect_timeout;
  f.transport.min_throughput_bytes_per_s = min_throughput;
  d.tick_pauses.front() = poll;

  if (const fwdsink::Status e = fwdsink::Validate(d); !e.ok()) {
    return {std::nullopt, {OptionForField(e.field()), e.message() + " (" + e.field() + ")"}};
  }
  return {c, {}};
}

Parsed<DeadConfig> ParseDead(const std::vector<std::string>& args) {
  DeadConfig c;
  if (args.empty()) return {std::nullopt, {"dead", "needs list, requeue or purge"}};
  const std::string& action = args.front();
  if (action == "--help" || action == "-h") {
    c.help = true;
    return {c, {}};
  }
  if (action == "list")
    c.action = DeadAction::kList;
  else if (action == "requeue")
    c.action = DeadAction::kRequeue;
  else if (action == "purge")
    c.action = DeadAction::kPurge;
  else
    return {std::nullopt, {"dead", "unknown action '" + action + "' (list|requeue|purge)"}};

  fwdsink::DeadFilter& flt = c.filter;
  std::string reason, kind, search;
  std::uint64_t status = 0, offset = 0, limit = flt.limit;
  milliseconds older{0}, newer{0};
  bool has_status = false, has_older = false, has_newer = false;
  auto mark = [&](bool& flag, Handler h) {
    return [&flag, h = std::move(h)](const std::string& v) {
      flag = true;
      return h(v);
    };
  };
  const Flag filters[] = {
      {"--spool", true, Path(c.spool)},
      {"--reason", true, Text(reason)},
      {"--status", true, mark(has_status, Count(status, 100))},
      {"--kind", true, Text(kind)},
      {"--older-than", true, mark(has_older, PositiveDuration(older))},
      {"--newer-than", true, mark(has_newer, PositiveDuration(newer))},
      {"--search", true, Text(search)},
      {"--offset", true, Count(offset, 0)},
      {"--limit", true, Count(limit, 0)},
      {"--json", false, Set(c.json)},
      {"--all", false, Set(c.all)},
      {"--help", false, Set(c.help)},
      {"-h", false, Set(c.help)},
  };
  // Only the flags that make sense for the action are accepted.
  std::vector<Flag> allowed;
  for (const Flag& f : filters) {
    const bool listing = f.name == "--offset" || f.name == "--limit" || f.name == "--json";
    const bool filter = f.name != "--spool" && f.name != "--all" && f.name != "--help" &&
                        f.name != "-h" && !listing;
    if (c.action == DeadAction::kRequeue && (filter || listing || f.name == "--all")) continue;
    if (c.action == DeadAction::kPurge && listing) continue;
    if (c.action == DeadAction::kList && f.name == "--all") continue;
    allowed.push_back(f);
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  std::vector<std::string>* positionals = c.action == DeadAction::kList ? nullptr : &c.names;
  if (auto e = ParseFlags(rest, allowed, positionals)) return {std::nullopt, *e};
  if (c.help) return {c, {}};
  if (c.spool.empty()) return {std::nullopt, {"--spool", "is required"}};

  if (!reason.empty()) flt.reason = reason;
  if (has_status) {
    if (status > 599) return {std::nullopt, {"--status", "must be an HTTP status (100-599)"}};
    flt.status = static_cast<int>(status);
  }
  if (!kind.empty()) {
    if (kind == "poison")
      flt.kind = fwdsink::DeadKind::kPoison;
    else if (kind == "horizon")
      flt.kind = fwdsink::DeadKind::kHorizon;
    else
      return {std::nullopt, {"--kind", "'" + kind + "' is not poison or horizon"}};
  }
  if (has_older) flt.older_than = older;
  if (has_newer) flt.newer_than = newer;
  if (!search.empty()) flt.search = search;
  flt.offset = static_cast<std::size_t>(offset);
  flt.limit = static_cast<std::size_t>(limit);
  c.has_filter =
      flt.reason || flt.status || flt.kind || flt.older_than || flt.newer_than || flt.search;

  if (c.action == DeadAction::kRequeue && c.names.empty()) {
    return {std::nullopt, {"requeue", "needs at least one dead-letter NAME"}};
  }
  if (c.action == DeadAction::kPurge) {
    const int modes = (c.names.empty() ? 0 : 1) + (c.all ? 1 : 0) + (c.has_filter ? 1 : 0);
    // Purging deletes data: demand exactly one explicit selection, never a default.
    if (modes == 0) {
      return {std::nullopt, {"purge", "needs NAME..., --all or a filter (--reason, ...)"}};
    }
    if (modes > 1) {
      return {std::nullopt, {c.all ? "--all" : "purge", "choose one of NAME..., --all or filters"}};
    }
  }
  return {c, {}};
}

Parsed<GenerateConfig> ParseGenerate(const std::vector<std::string>& args) {
  GenerateConfig c;
  const Flag flags[] = {
      {"--spool", true, Path(c.spool)},
      {"--bytes", true, PositiveSize(c.bytes)},
      {"--partitions", true, Count(c.partitions, 1)},
      {"--seed", true, Count(c.seed, 0)},
      {"--help", false, Set(c.help)},
      {"-h", false, Set(c.help)},
  };
  if (auto e = ParseFlags(args, flags, nullptr)) return {std::nullopt, *e};
  if (c.help) return {c, {}};
  if (c.spool.empty()) return {std::nullopt, {"--spool", "is required"}};
  if (c.bytes == 0) return {std::nullopt, {"--bytes", "is required"}};
  if (c.partitions > 100'000) return {std::nullopt, {"--partitions", "is too large"}};
  return {c, {}};
}

std::string MainUsage() {
  return R"(usage: fwdsink <command> [options]

Ships the sealed NDJSON partitions of a spool directory to an HTTP(S) ingest endpoint.

commands:
  forward    forward the spool until SIGINT/SIGTERM (or one pass with --once)
  dead       list, requeue or purge dead letters (poisoned rows, given-up partitions)
  generate   write realistic telemetry rows into a spool (for demos and tests)
  status     show a spool's backlog, cursors, dead letters and last error (read-only)

Run `fwdsink <command> --help` for a command's options.
)";
}

std::string ForwardUsage() {
  return R"(usage: fwdsink forward --spool DIR --url URL [options]

Forwards every sealed partition in DIR/ready to URL, chunk by chunk, retrying in place
on 429/503, until SIGINT/SIGTERM (exit 0 with every cursor at its last acknowledged
chunk). Durations are seconds unless suffixed: 250ms, 1.5s, 5m, 1h.

  --spool DIR            spool directory (required)
  --url URL              ingest endpoint, http:// or https:// (required)
  --once                 one pass over the ready partitions, then exit:
                           0  everything delivered
                           65 some rows went to dead letters, or entries of ready/
                              went to quarantine/ (wins over 75)
                           75 something was left for a later run (respooled, errors),
                              or another fwdsink holds the spool's lock
                           77 the server refused the token after a refresh
                           78 the server refuses our configuration (unknown table,
                              setting or encoding, credentials), or every request
                              of the pass failed the same permanent way (404...)
  --token-file F         bearer token file, read on first use and after a 401
  --chunk-bytes N        target chunk size before compression (default 1m)
  --compression C        zstd (default), gzip or identity (no Content-Encoding header)
  --zstd-level N         zstd level (default 1)
  --ladder LIST          waits without Retry-After, e.g. 30,60,120,300 (the default)
  --max-wait S           longest single wait, also caps Retry-After (default 300)
  --inline-budget S      time per chunk before respooling the partition (default 300)
  --jitter F             jitter fraction in [0,1) (default 0.5): ladder waits and the
                         pauses between passes spread by +-F; Retry-After waits and
                         gate holds only lengthened, by at most 10% or 1 s; 0 = off
  --pacing auto|off      pace requests to the rate the server advertises (RateLimit,
                         X-RateLimit) or that is learned from its refusals (default auto)
  --horizon S            dead-letter a partition failing this long (default 24h)
  --poll S               idle poll interval between passes (default 1)
  --label NAME           label in events and logs (default fwdsink)
  --key-header NAME      idempotency header (default Idempotency-Key)
  --ca-file F            CA bundle for https (default: system store)
  --connect-timeout S    TCP/TLS connect timeout (default 5)
  --read-timeout S       read/write stall timeout (default 30)
  --header 'N: V'        extra request header (repeatable; never logged)
  --header-file 'N: F'   header whose value is the content of file F (secrets)
  --basic-auth-file F    HTTP Basic auth from F ("user:password"); not with --token-file
                         (credentials in the URL, http://user:pw@host/, work too)
  --client-cert F        client certificate (PEM) for mutual TLS; needs --client-key
  --client-key F         its private key (PEM)
  --proxy URL            http:// proxy (https is tunnelled with CONNECT); default from
                         https_proxy / http_proxy unless no_proxy matches the host
  --key-param NAME       also put the chunk's key in the URL query as NAME=KEY
                         (ClickHouse: insert_deduplication_token)
  --no-key-header        send the key only in the query (needs --key-param)
  --profile P            response rules: generic (default) or clickhouse (reads
                         ClickHouse's exception codes)
  --retry-status LIST    statuses retried in place besides 429/503
                         (default 408,425,5xx; e.g. 408,425,500,502,504)
  --min-throughput N     slowest transfer accepted, bytes/s (default 32k): a request
                           of B bytes gets B/N s to go out, whatever trickles
  --response-timeout S   response headers due this long after the upload allowance
                           (default 30); every request deadline is also capped by
                           what is left of the inline budget
  --max-split-requests N requests one partition's bisection may spend (default 256)
  --log-json             JSON log lines on stderr even on a terminal
  --progress             progress line on stderr even when not a terminal
  --log-file F           also append the JSON log lines to F
  --stats-interval S     period of the JSON stats line (default 10)
  --metrics-listen A:P   serve GET /metrics (Prometheus), /healthz and /readyz on
                         A:P, e.g. 127.0.0.1:9464 (default off; port 0 picks one,
                         named in the daemon.start line)
  --max-dead-bytes N     delete the oldest dead letters while dead/ holds more
  --max-dead-age S       delete dead letters dead longer than S (e.g. 168h)
exit codes: 64 bad options (the message names the option), 74 spool unusable.
)";
}

std::string DeadUsage() {
  return R"(usage: fwdsink dead list    --spool DIR [filters] [--offset N] [--limit N] [--json]
       fwdsink dead requeue --spool DIR NAME...
       fwdsink dead purge   --spool DIR (NAME... | --all | filters)

filters (all must match):
  --reason R        exact reason (e.g. bad_row, byte_rate)
  --status N        exact HTTP status of the last refusal
  --kind K          poison (a refused chunk) or horizon (a given-up partition)
  --older-than S    dead at least S ago        --newer-than S   dead less than S ago
  --search TEXT     substring of the record or of the dead rows
requeue copies the rows back into ready/ as a new partition; the record stays as an
audit trail until purged. Exit 66 when a NAME does not exist.
)";
}

std::string GenerateUsage() {
  return R"(usage: fwdsink generate --spool DIR --bytes N [--partitions K] [--seed S]

Writes about N bytes (k/m/g suffixes allowed) of realistic telemetry NDJSON (~200-byte
rows) into K sealed partitions of DIR (default 4), deterministically for a seed
(default 1). Prints the number of rows written on stdout.
)";
}

}  // namespace fwdsink_cli
