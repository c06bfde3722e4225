// The daemon's request options (issue 10): extra headers, secrets read from files,
// Basic auth, mTLS, the proxy from the environment. Pure functions apart from
// LoadRequestSecrets(), which reads the files named on the command line.
// @ref LLP 0017#request-options
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fwdsink/forward_sink.h"
#include "fwdsink/status.h"

namespace fwdsink_cli {

// What the request flags asked for, before the secret files are read.
struct RequestFlags {
  std::vector<std::pair<std::string, std::filesystem::path>> header_files;  // --header-file
  std::optional<std::filesystem::path> basic_auth_file;                     // --basic-auth-file
  std::optional<std::string> proxy;                                         // --proxy
};

// Splits "Name: value" (optional whitespace after the colon) and checks both parts
// (fwdsink::ValidateHeaderField); the status names `source` and never quotes the value.
[[nodiscard]] fwdsink::Result<std::pair<std::string, std::string>> ParseHeaderFlag(
    std::string_view text, std::string_view source);

// Reads every --header-file (the value is the file's content without its trailing
// newline) and the --basic-auth-file ("user:password") into `forward`. Statuses name
// the flag and the file, never the secret.
[[nodiscard]] fwdsink::Status LoadRequestSecrets(const RequestFlags& flags,
                                                 fwdsink::ForwardOptions& forward);

// Looks an environment variable up; returns nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// Returns the proxy for `url` from the environment, curl's way: https_proxy (or
// HTTPS_PROXY) for https, http_proxy (lower case only) for http, none when no_proxy
// (or NO_PROXY) is "*" or lists the host or a domain suffix of it. Empty when none.
[[nodiscard]] std::string ProxyFromEnvironment(std::string_view url, const EnvLookup& env);
// The real environment.
[[nodiscard]] EnvLookup ProcessEnvironment();

}  // namespace fwdsink_cli
