#include "request_options.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "fwdsink/transport.h"

namespace fwdsink_cli {
namespace {

fwdsink::Status Bad(std::string field, std::string message) {
  return fwdsink::Status::Config(std::move(field), std::move(message));
}

std::optional<std::string> ReadSecretFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // One trailing newline (and a CR before it) is the file's, not the secret's.
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.back() == '\r') text.pop_back();
  return text;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// no_proxy entries: "*", "host", ".domain" or "domain" (both match subdomains), with
// an optional ":port" that we ignore, as curl does for matching.
bool NoProxyMatches(std::string_view list, std::string_view host) {
  const std::string h = Lower(host);
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
    const std::string entry = Lower(item);
    if (!entry.empty() && (h == entry || (h.size() > entry.size() && h.ends_with(entry) &&
                                          h[h.size() - entry.size() - 1] == '.'))) {
      return true;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return false;
}

}  // namespace

fwdsink::Result<std::pair<std::string, std::string>> ParseHeaderFlag(std::string_view text,
                                                                     std::string_view source) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    return Bad(std::string(source), std::string(source) + ": expected 'Name: value'");
  }
  std::string name(text.substr(0, colon));
  std::string_view value = text.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  if (fwdsink::Status e = fwdsink::ValidateHeaderField(name, value, source); !e.ok()) return e;
  return std::pair{std::move(name), std::string(value)};
}

fwdsink::Status LoadRequestSecrets(const RequestFlags& flags, fwdsink::ForwardOptions& forward) {
  for (const auto& [name, path] : flags.header_files) {
    const std::string source = "--header-file " + path.string();
    const auto value = ReadSecretFile(path);
    if (!value) return Bad("--header-file", source + ": cannot read the file");
    if (value->empty()) return Bad("--header-file", source + ": the file is empty");
    if (fwdsink::Status e = fwdsink::ValidateHeaderField(name, *value, source); !e.ok()) {
      return Bad("--header-file", e.message());
    }
    forward.headers.emplace_back(name, *value);
  }
  if (flags.basic_auth_file) {
    const std::string source = "--basic-auth-file " + flags.basic_auth_file->string();
    const auto text = ReadSecretFile(*flags.basic_auth_file);
    if (!text) return Bad("--basic-auth-file", source + ": cannot read the file");
    const auto colon = text->find(':');
    if (colon == std::string::npos || colon == 0) {
      return Bad("--basic-auth-file", source + ": expected one line 'user:password'");
    }
    forward.basic_auth = fwdsink::BasicAuth{text->substr(0, colon), text->substr(colon + 1)};
    if (fwdsink::Status e = fwdsink::ValidateHeaderField("Authorization", *text, source); !e.ok()) {
      return Bad("--basic-auth-file", e.message());
    }
  }
  return fwdsink::OkStatus();
}

std::string ProxyFromEnvironment(std::string_view url, const EnvLookup& env) {
  const fwdsink::Result<fwdsink::Endpoint> ep = fwdsink::ParseEndpoint(url);
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

}  // namespace fwdsink_cli
