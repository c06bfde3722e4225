// SPDX-License-Identifier: Apache-2.0
// The request secrets read from files (header files, the Basic-auth file, the bearer
// token file) and the proxy from the environment: moved from the daemon into the
// library so that every embedder (the C API too) reads them the same way.
// @ref LLP 0017#request-options
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "fwdsink/http_header.h"
#include "fwdsink/read_file.h"
#include "fwdsink/settings.h"
#include "fwdsink/transport.h"
#include "io/http_rules.h"

extern char** environ;

namespace fwdsink {
namespace {

Status Bad(std::string field, std::string message) {
  return Status::Config(std::move(field), std::move(message));
}

// Every credential file is read by ReadRegularFile: a folder, a FIFO or a device is an
// error naming the file, never a hang, an abort or gigabytes. @ref LLP 0023#regular-files
Result<std::string> ReadCredentialFile(const std::filesystem::path& path) {
  return ReadRegularFile(path, {.max_bytes = kMaxCredentialFileBytes});
}

Result<std::string> ReadSecretFile(const std::filesystem::path& path) {
  Result<std::string> read = ReadCredentialFile(path);
  if (!read) return read;
  std::string text = std::move(*read);
  // One trailing newline (and a CR before it) is the file's, not the secret's.
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.back() == '\r') text.pop_back();
  return text;
}

// The token file: surrounding whitespace is the file's; empty (or missing) means no
// token yet; a file that cannot be read (a folder, a FIFO, too large) is an error.
Result<std::optional<std::string>> ReadTokenFile(const std::filesystem::path& path) {
  Result<std::string> read = ReadCredentialFile(path);
  if (!read) {
    if (read.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
    return read.status();
  }
  const std::string& text = *read;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return std::optional<std::string>();
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::optional<std::string>(text.substr(first, last - first + 1));
}

using http_rules::ToLower;

// no_proxy entries: "*", "host", ".domain" or "domain" (both match subdomains), with
// an optional ":port" that we ignore, as curl does for matching.
bool NoProxyMatches(std::string_view list, std::string_view host) {
  const std::string h = ToLower(host);
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    std::string_view item = list.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == "*") return true;
    if (const auto colon = item.rfind(':');
        colon != std::string_view::npos && item.find(']') == std::string_view::npos) {
      item = item.substr(0, colon);
    }
    if (!item.empty() && item.front() == '.') item.remove_prefix(1);
    const std::string entry = ToLower(item);
    if (!entry.empty() && (h == entry || (h.size() > entry.size() && h.ends_with(entry) &&
                                          h[h.size() - entry.size() - 1] == '.'))) {
      return true;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return false;
}

Status LoadBasicAuth(const std::filesystem::path& path, ForwardOptions& forward) {
  const std::string source = "basic_auth_file " + path.string();
  const auto text = ReadSecretFile(path);
  if (!text) return Bad("basic_auth_file", source + ": " + text.status().message());
  const auto colon = text->find(':');
  if (colon == std::string::npos || colon == 0) {
    return Bad("basic_auth_file", source + ": expected one line 'user:password'");
  }
  if (Status e = ValidateHeaderField("Authorization", *text, source); !e.ok()) {
    return Bad("basic_auth_file", e.message());
  }
  forward.basic_auth = BasicAuth{text->substr(0, colon), text->substr(colon + 1)};
  return OkStatus();
}

}  // namespace

Result<std::pair<std::string, std::string>> ParseHeaderFlag(std::string_view text,
                                                            std::string_view source) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    return Bad(std::string(source), std::string(source) + ": expected 'Name: value'");
  }
  std::string name(text.substr(0, colon));
  std::string_view value = text.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  if (Status e = ValidateHeaderField(name, value, source); !e.ok()) return e;
  return std::pair{std::move(name), std::string(value)};
}

Status LoadRequestSecrets(const RequestFiles& files, ForwardOptions& forward) {
  for (const auto& [name, path] : files.header_files) {
    const std::string source = "header_file " + path.string();
    const auto value = ReadSecretFile(path);
    if (!value) return Bad("header_file", source + ": " + value.status().message());
    if (value->empty()) return Bad("header_file", source + ": the file is empty");
    if (Status e = ValidateHeaderField(name, *value, source); !e.ok()) {
      return Bad("header_file", e.message());
    }
    forward.headers.emplace_back(name, *value);
  }
  if (files.basic_auth_file) return LoadBasicAuth(*files.basic_auth_file, forward);
  return OkStatus();
}

TokenProvider FileTokenProvider(std::filesystem::path path) {
  struct Cache {
    std::mutex mu;
    std::optional<std::string> token;  // guarded by mu
    bool read = false;                 // guarded by mu
  };
  auto cache = std::make_shared<Cache>();
  return [path = std::move(path), cache](bool force_refresh) -> std::optional<std::string> {
    std::lock_guard lock(cache->mu);
    if (!cache->read || force_refresh || !cache->token) {
      // A file that has become unreadable (a folder, a FIFO) keeps the token read
      // before; a missing or empty one means no token. @ref LLP 0023#regular-files
      Result<std::optional<std::string>> fresh = ReadTokenFile(path);
      if (fresh.ok()) cache->token = std::move(*fresh);
      cache->read = true;
    }
    return cache->token;
  };
}

Status CheckTokenFile(const std::filesystem::path& path) {
  const Result<std::optional<std::string>> token = ReadTokenFile(path);
  if (!token)
    return Bad("token_file", "token_file " + path.string() + ": " + token.status().message());
  if (!*token) return OkStatus();
  // @ref LLP 0023#header-safety
  return ValidateHeaderValue("Bearer " + **token, "token_file " + path.string());
}

std::string ProxyFromEnvironment(std::string_view url, const EnvLookup& env) {
  const Result<Endpoint> ep = ParseEndpoint(url);
  if (!ep.ok()) return {};
  for (const char* name : {"no_proxy", "NO_PROXY"}) {
    if (const auto list = env(name)) {
      if (NoProxyMatches(*list, ep->host)) return {};
      break;
    }
  }
  // HTTP_PROXY in upper case is not read: a CGI server sets it from a request header.
  const std::vector<const char*> names =
      ep->scheme == "https" ? std::vector<const char*>{"https_proxy", "HTTPS_PROXY"}
                            : std::vector<const char*>{"http_proxy"};
  for (const char* name : names) {
    if (auto value = env(name)) return *value;
  }
  return {};
}

EnvLookup ProcessEnvironment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

std::vector<std::string> ProcessEnvironmentEntries() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace fwdsink
