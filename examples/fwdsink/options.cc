// SPDX-License-Identifier: Apache-2.0
#include "options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <span>

#include "fwdsink/codec.h"
#include "fwdsink/status.h"

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
    if (!n) return Bad("'" + v + "' is " + fwdsink::SizeProblem(v));
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

// Splits "--name=value" into the name and the inline value.
std::pair<std::string, std::optional<std::string>> SplitFlag(const std::string& arg) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos) return {arg, std::nullopt};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

// What `fwdsink forward` takes besides the settings.
struct CommandFlags {
  bool help = false;
  bool print_config = false;
  std::optional<std::string> config_file;
};

// Walks the forward flags: --help, --print-config and --config are the command's;
// every other flag is a settings key (--chunk-bytes -> chunk_bytes). @ref LLP 0024#table
std::optional<UsageError> ParseForwardFlags(const std::vector<std::string>& args,
                                            fwdsink::Settings& settings, CommandFlags& command) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.empty() || arg[0] != '-' || arg == "-") return UsageError{arg, "unexpected argument"};
    const auto [name, inline_value] = SplitFlag(arg);
    const std::string key = fwdsink::KeyForFlag(name);
    const fwdsink::SettingInfo* info = key.empty() ? nullptr : fwdsink::FindSetting(key);
    const bool is_switch = info ? info->is_switch : name != "--config";
    if (!info && name != "--help" && name != "-h" && name != "--print-config" &&
        name != "--config") {
      return UsageError{name, "unknown option (see --help)"};
    }
    std::string value;
    if (is_switch && inline_value) return UsageError{name, "takes no value"};
    if (!is_switch) {
      if (inline_value)
        value = *inline_value;
      else if (i + 1 < args.size())
        value = args[++i];
      else
        return UsageError{name, "needs a value"};
    }
    if (name == "--help" || name == "-h") {
      command.help = true;
    } else if (name == "--print-config") {
      command.print_config = true;
    } else if (name == "--config") {
      if (value.empty()) return UsageError{name, "must name a file"};
      command.config_file = value;
    } else if (fwdsink::Status e = settings.Set(key, value, fwdsink::SettingSource::kFlag, name);
               !e.ok()) {
      return UsageError{"", e.message()};
    }
  }
  return std::nullopt;
}

// TOML basic string: quotes and backslashes escaped, control bytes as \uXXXX.
std::string TomlString(std::string_view v) {
  std::string out = "\"";
  for (const char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

std::string UsageError::Text() const {
  return "fwdsink: " + (option.empty() ? std::string() : option + ": ") + message;
}

std::string OptionForField(std::string_view field) {
  const std::string key = fwdsink::KeyForField(field);
  if (key.empty()) return "config " + std::string(field);
  return fwdsink::FlagForKey(key);
}

Parsed<ForwardConfig> ParseForward(const std::vector<std::string>& args,
                                   std::span<const std::string> environment) {
  ForwardConfig c;
  fwdsink::Settings settings;
  CommandFlags command;
  if (auto e = ParseForwardFlags(args, settings, command)) return {std::nullopt, *e};
  c.help = command.help;
  if (c.help) return {c, {}};
  c.print_config = command.print_config;
  // --config wins over FWDSINK_CONFIG (a variable naming the file, not a setting).
  std::string config_source = "--config";
  if (!command.config_file) {
    for (const std::string& entry : environment) {
      if (entry.starts_with("FWDSINK_CONFIG=") && entry.size() > 15) {
        command.config_file = entry.substr(15);
        config_source = "FWDSINK_CONFIG";
      }
    }
  }
  if (command.config_file) {
    // A file that cannot be read: the message names it, the option says where its
    // name came from. (An error inside it names the file and line.)
    if (fwdsink::Status e = settings.LoadFile(*command.config_file); !e.ok()) {
      return {std::nullopt, {e.field() == "config_file" ? config_source : "", e.message()}};
    }
  }
  // FWDSINK_ARGS: the unit's extra flags (/etc/default/fwdsink). @ref LLP 0001#deb-files
  static constexpr std::string_view kNotSettings[] = {"FWDSINK_CONFIG", "FWDSINK_ARGS"};
  if (fwdsink::Status e = settings.LoadEnvironment(environment, &c.unknown_variables, kNotSettings);
      !e.ok()) {
    return {std::nullopt, {"", e.message()}};
  }
  c.effective = settings.Describe();
  fwdsink::Result<fwdsink::SinkSettings> built = settings.Build();
  if (!built.ok()) {
    if (!c.print_config) return {std::nullopt, {"", built.status().message()}};
    c.print_error = built.status().message();
    return {c, {}};
  }
  static_cast<fwdsink::SinkSettings&>(c) = std::move(*built);
  return {c, {}};
}

std::string PrintConfig(const ForwardConfig& config) {
  std::string out =
      "# fwdsink forward: effective settings (flags > environment > config file > defaults)\n";
  for (const fwdsink::Settings::Effective& e : config.effective) {
    const fwdsink::SettingInfo* info = fwdsink::FindSetting(e.key);
    std::string line;
    if (e.source == fwdsink::SettingSource::kDefault && e.value.empty()) {
      line = "# " + e.key + " (unset)";
    } else {
      line = e.key + " = " + (info && info->is_switch ? e.value : TomlString(e.value));
      line.resize(std::max<std::size_t>(line.size() + 1, 40), ' ');
      line += "# " + std::string(fwdsink::to_string(e.source));
      if (e.source != fwdsink::SettingSource::kDefault) line += " " + e.where;
    }
    out += line + "\n";
  }
  for (const std::string& name : config.unknown_variables) {
    out += "# warning: " + name + " is not a setting (ignored)\n";
  }
  if (!config.print_error.empty()) out += "# error: " + config.print_error + "\n";
  return out;
}

namespace {

// The action word of `fwdsink dead`, or nullopt when it names none.
std::optional<DeadAction> DeadActionNamed(std::string_view action) {
  if (action == "list") return DeadAction::kList;
  if (action == "requeue") return DeadAction::kRequeue;
  if (action == "purge") return DeadAction::kPurge;
  return std::nullopt;
}

// The values of `dead`'s filter and listing flags as given, before they are checked.
struct DeadFlagValues {
  std::string reason, kind, search;
  std::uint64_t status = 0, offset = 0, limit = 0;
  milliseconds older{0}, newer{0};
  bool has_status = false, has_older = false, has_newer = false;
};

// The flags of `dead <action>`, writing into `c` and `v` (which must outlive them).
std::vector<Flag> DeadFlags(DeadConfig& c, DeadFlagValues& v) {
  auto mark = [&](bool& flag, Handler h) {
    return [&flag, h = std::move(h)](const std::string& value) {
      flag = true;
      return h(value);
    };
  };
  const Flag filters[] = {
      {"--spool", true, Path(c.spool)},
      {"--reason", true, Text(v.reason)},
      {"--status", true, mark(v.has_status, Count(v.status, 100))},
      {"--kind", true, Text(v.kind)},
      {"--older-than", true, mark(v.has_older, PositiveDuration(v.older))},
      {"--newer-than", true, mark(v.has_newer, PositiveDuration(v.newer))},
      {"--search", true, Text(v.search)},
      {"--offset", true, Count(v.offset, 0)},
      {"--limit", true, Count(v.limit, 0)},
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
  return allowed;
}

// Checks the filter values and writes them into c.filter (and c.has_filter).
std::optional<UsageError> SetDeadFilter(const DeadFlagValues& v, DeadConfig& c) {
  fwdsink::DeadFilter& flt = c.filter;
  if (!v.reason.empty()) flt.reason = v.reason;
  if (v.has_status) {
    if (v.status > 599) return UsageError{"--status", "must be an HTTP status (100-599)"};
    flt.status = static_cast<int>(v.status);
  }
  if (!v.kind.empty()) {
    if (v.kind == "poison")
      flt.kind = fwdsink::DeadKind::kPoison;
    else if (v.kind == "horizon")
      flt.kind = fwdsink::DeadKind::kHorizon;
    else
      return UsageError{"--kind", "'" + v.kind + "' is not poison or horizon"};
  }
  if (v.has_older) flt.older_than = v.older;
  if (v.has_newer) flt.newer_than = v.newer;
  if (!v.search.empty()) flt.search = v.search;
  flt.offset = static_cast<std::size_t>(v.offset);
  flt.limit = static_cast<std::size_t>(v.limit);
  c.has_filter =
      flt.reason || flt.status || flt.kind || flt.older_than || flt.newer_than || flt.search;
  return std::nullopt;
}

// Checks that requeue names what it requeues and purge selects exactly one way.
std::optional<UsageError> CheckDeadSelection(const DeadConfig& c) {
  if (c.action == DeadAction::kRequeue && c.names.empty()) {
    return UsageError{"requeue", "needs at least one dead-letter NAME"};
  }
  if (c.action == DeadAction::kPurge) {
    const int modes = (c.names.empty() ? 0 : 1) + (c.all ? 1 : 0) + (c.has_filter ? 1 : 0);
    // Purging deletes data: demand exactly one explicit selection, never a default.
    if (modes == 0) {
      return UsageError{"purge", "needs NAME..., --all or a filter (--reason, ...)"};
    }
    if (modes > 1) {
      return UsageError{c.all ? "--all" : "purge", "choose one of NAME..., --all or filters"};
    }
  }
  return std::nullopt;
}

}  // namespace

Parsed<DeadConfig> ParseDead(const std::vector<std::string>& args) {
  DeadConfig c;
  if (args.empty()) return {std::nullopt, {"dead", "needs list, requeue or purge"}};
  const std::string& action = args.front();
  if (action == "--help" || action == "-h") {
    c.help = true;
    return {c, {}};
  }
  const std::optional<DeadAction> named = DeadActionNamed(action);
  if (!named) {
    return {std::nullopt, {"dead", "unknown action '" + action + "' (list|requeue|purge)"}};
  }
  c.action = *named;

  DeadFlagValues values;
  values.limit = c.filter.limit;
  const std::vector<Flag> allowed = DeadFlags(c, values);
  std::vector<std::string> rest(args.begin() + 1, args.end());
  std::vector<std::string>* positionals = c.action == DeadAction::kList ? nullptr : &c.names;
  if (auto e = ParseFlags(rest, allowed, positionals)) return {std::nullopt, *e};
  if (c.help) return {c, {}};
  if (c.spool.empty()) return {std::nullopt, {"--spool", "is required"}};
  if (auto e = SetDeadFilter(values, c)) return {std::nullopt, *e};
  if (auto e = CheckDeadSelection(c)) return {std::nullopt, *e};
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

Run `fwdsink <command> --help` for a command's options; `fwdsink --version` prints the
versions of fwdsink and of the libraries it runs with (OpenSSL, zstd, cpp-httplib).
)";
}

std::string ForwardUsage() {
  std::string out = R"(usage: fwdsink forward --spool DIR --url URL [options]

Forwards every sealed partition in DIR/ready to URL, chunk by chunk, retrying in place
on 429/503, until SIGINT/SIGTERM (exit 0 with every cursor at its last acknowledged
chunk). SIGHUP reopens --log-file and re-reads the token, header and Basic-auth files.
Durations are seconds unless suffixed: 250ms, 1.5s, 5m, 1h; sizes take k, m or g.

  --config F               read settings from the TOML file F (or FWDSINK_CONFIG=F)
  --print-config           print every setting's effective value and source, then exit
  --help                   this text
)";
  // One line per key of the settings table. @ref LLP 0024#table
  for (const fwdsink::SettingInfo& s : fwdsink::SettingTable()) {
    std::string line = "  " + fwdsink::FlagForKey(s.key);
    if (!s.value_name.empty()) line += " " + std::string(s.value_name);
    line.resize(std::max<std::size_t>(line.size() + 1, 27), ' ');
    line += s.help;
    if (!s.default_value.empty() && !s.is_switch) {
      line += " (default " + std::string(s.default_value) + ")";
    }
    out += line + "\n";
  }
  out += R"(
Every option is also a key of the config file (the flag without "--", '_' for '-':
chunk_bytes = "4m") and an environment variable (FWDSINK_CHUNK_BYTES=4m; one header per
line in FWDSINK_HEADER). Precedence: flags, then environment, then file, then defaults.
Switches take true/false (or 1/0) in the file and the environment.

--once exit codes:
  0  everything delivered
  65 some rows went to dead letters, or entries of ready/ went to quarantine/ (wins
     over 75)
  75 something was left for a later run (respooled, errors), or another fwdsink holds
     the spool's lock
  77 the server refused the token after a refresh
  78 the server refuses our configuration (unknown table, setting or encoding,
     credentials), or every request of the pass failed the same permanent way (404...)
exit codes: 64 bad settings (the message names the flag, variable or file:line, and the
key), 74 spool unusable, 70 the daemon stopped without a stop request (a bug: never 0,
so a supervisor restarts it). Without --once only SIGTERM/SIGINT ends it with 0.
)";
  return out;
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
