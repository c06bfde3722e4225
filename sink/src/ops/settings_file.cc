// SPDX-License-Identifier: Apache-2.0
// Settings::LoadFile: the daemon's --config file, TOML parsed by toml++ (Debian's
// libtomlplusplus-dev), used header-only and in this file only, so neither the
// installed package nor the C API's shared library depends on a toml++ library at run
// time. Exceptions are off in toml++: a parse error is a value. @ref LLP 0024#file
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTERS 0
#include <toml++/toml.h>

#include <algorithm>
#include <charconv>

#include "fwdsink/read_file.h"
#include "fwdsink/settings.h"

namespace fwdsink {
namespace {

struct Entry {
  std::size_t line = 0;
  std::string key;
  const toml::node* node = nullptr;
};

Status Bad(const std::string& where, const std::string& message) {
  return Status(StatusCode::kInvalidArgument, where + ": " + message);
}

// A scalar as the text a flag would carry: strings as they are, numbers in decimal,
// booleans as true/false. nullopt for dates, times, arrays and tables.
std::optional<std::string> ScalarText(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* f = node.as_floating_point()) {
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f->get());
    if (ec != std::errc{}) return std::nullopt;
    return std::string(buf, end);
  }
  return std::nullopt;
}

std::string LineOf(const std::string& file, const toml::node& node) {
  return file + ":" + std::to_string(node.source().begin.line);
}

// An array: each element one Set() for a repeatable key (header = ["A: 1", "B: 2"]),
// otherwise the elements joined by commas (ladder = [30, 60, 120]).
Status SetArray(Settings& settings, const SettingInfo& info, const toml::array& array,
                const std::string& file) {
  std::string joined;
  for (const toml::node& element : array) {
    const auto text = ScalarText(element);
    if (!text) {
      return Bad(LineOf(file, element), std::string(info.key) + ": expected a list of values");
    }
    if (info.repeatable) {
      if (Status e = settings.Set(info.key, *text, SettingSource::kFile, LineOf(file, element));
          !e.ok()) {
        return e;
      }
    } else {
      joined += (joined.empty() ? "" : ",") + *text;
    }
  }
  if (info.repeatable) return OkStatus();
  return settings.Set(info.key, joined, SettingSource::kFile, LineOf(file, array));
}

Status SetEntry(Settings& settings, const Entry& e, const std::string& file) {
  const std::string where = file + ":" + std::to_string(e.line);
  const SettingInfo* info = FindSetting(e.key);
  if (!info) {
    std::string hint;
    std::string underscored = e.key;
    std::replace(underscored.begin(), underscored.end(), '-', '_');
    if (FindSetting(underscored)) hint = " (did you mean " + underscored + "?)";
    return Status(StatusCode::kNotFound, where + ": unknown key '" + e.key + "'" + hint, e.key);
  }
  if (const auto* array = e.node->as_array()) return SetArray(settings, *info, *array, file);
  const auto text = ScalarText(*e.node);
  if (!text) {
    return Bad(where, e.key + ": expected a string, number or boolean (the file is flat: " +
                          "key = value, no [sections])");
  }
  return settings.Set(e.key, *text, SettingSource::kFile, where);
}

}  // namespace

Status Settings::LoadFile(const std::filesystem::path& path) {
  const std::string file = path.string();
  // A folder, a FIFO or /dev/zero is refused before a byte is read; a file past 1 MiB
  // is not a configuration. @ref LLP 0023#regular-files
  Result<std::string> read = ReadRegularFile(path, {.max_bytes = kMaxConfigFileBytes});
  if (!read) {
    return Status(read.status().code(), "cannot read the config file: " + read.status().message(),
                  "config_file");
  }
  const std::string& text = *read;
  toml::parse_result parsed = toml::parse(text, file);
  if (!parsed) {
    const toml::parse_error& err = parsed.error();
    return Bad(file + ":" + std::to_string(err.source().begin.line),
               std::string(err.description()));
  }
  // toml++ iterates keys in name order; report and apply them in file order.
  std::vector<Entry> entries;
  for (const auto& [key, node] : parsed.table()) {
    entries.push_back({key.source().begin.line, std::string(key.str()), &node});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.line < b.line; });
  for (const Entry& e : entries) {
    if (Status s = SetEntry(*this, e, file); !s.ok()) return s;
  }
  return OkStatus();
}

}  // namespace fwdsink
