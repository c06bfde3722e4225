// SPDX-License-Identifier: Apache-2.0
// URLs: the one parser (ParseEndpoint), redaction and percent-encoding, declared in
// fwdsink/transport.h. Pure functions, any thread. @ref LLP 0017#urls
#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <string>

#include "fwdsink/transport.h"
#include "io/http_rules.h"
#include "io/url.h"

namespace fwdsink {

std::string Endpoint::SchemeHostPort() const {
  const bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

namespace {

// Decodes %XX escapes; nullopt for a broken escape or an encoded NUL/CR/LF.
std::optional<std::string> PercentDecode(std::string_view in) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    const int hi = url::HexValue(in[i + 1]), lo = url::HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0' || c == '\r' || c == '\n') return std::nullopt;
    out.push_back(c);
    i += 2;
  }
  return out;
}

bool IsUnreserved(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
         c == '~';
}

// RFC 3986 reg-name as DNS uses it: letters, digits, '-', '.', '_' (no escapes).
bool IsHostName(std::string_view host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
  });
}

// An IPv6 literal's insides: hex digits, ':' and '.' (an embedded IPv4), at least one
// ':'; zone ids ("%eth0") are refused.
bool IsIpv6Literal(std::string_view host) {
  return host.find(':') != std::string_view::npos &&
         std::all_of(host.begin(), host.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
         });
}

// The pieces of "scheme://authority/path?query" before any checking.
struct UrlParts {
  std::string_view scheme, userinfo, hostport, path_and_query;
  bool has_userinfo = false;
};

std::optional<UrlParts> SplitUrl(std::string_view url) {
  const auto sep = url.find("://");
  if (sep == std::string_view::npos) return std::nullopt;
  UrlParts p;
  p.scheme = url.substr(0, sep);
  const std::string_view rest = url.substr(sep + 3);
  // The authority ends at the first '/', '?' or '#' (RFC 3986 section 3.2).
  const auto end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  p.path_and_query = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    p.has_userinfo = true;
    p.userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
  }
  p.hostport = authority;
  return p;
}

// Splits "host[:port]" or "[v6][:port]"; returns an error sentence or empty.
std::string ParseHostPort(std::string_view hostport, Endpoint& ep) {
  std::string_view port_str;
  bool has_port = false;
  if (!hostport.empty() && hostport.front() == '[') {
    const auto close = hostport.find(']');
    if (close == std::string_view::npos) return "unterminated IPv6 literal";
    ep.host = std::string(hostport.substr(1, close - 1));
    const std::string_view after = hostport.substr(close + 1);
    if (!after.empty() && after.front() != ':') return "junk after IPv6 literal";
    has_port = !after.empty();
    if (has_port) port_str = after.substr(1);
    if (!IsIpv6Literal(ep.host)) return "'" + ep.host + "' is not an IPv6 address";
  } else {
    const auto colon = hostport.rfind(':');
    ep.host = std::string(hostport.substr(0, colon));
    has_port = colon != std::string_view::npos;
    if (has_port) port_str = hostport.substr(colon + 1);
    if (ep.host.empty()) return "missing host";
    if (!IsHostName(ep.host)) {
      return "host '" + ep.host + "' has characters a host name cannot have" +
             (ep.host.find(':') != std::string::npos ? " (an IPv6 address needs [brackets])" : "");
    }
  }
  if (!has_port) return {};
  int port = 0;
  const auto* end = port_str.data() + port_str.size();
  const auto [p, ec] = std::from_chars(port_str.data(), end, port);
  if (port_str.empty() || ec != std::errc{} || p != end || port < 1 || port > 65535) {
    return "port must be a number from 1 to 65535";
  }
  ep.port = port;
  return {};
}

// Decodes "user[:password]" into the endpoint; returns an error sentence or empty.
std::string ParseUserinfo(std::string_view userinfo, Endpoint& ep) {
  const auto colon = userinfo.find(':');
  auto user = PercentDecode(userinfo.substr(0, colon));
  if (!user || user->empty()) return "the user name in the URL is empty or badly escaped";
  ep.username = std::move(*user);
  if (colon == std::string_view::npos) return {};
  auto password = PercentDecode(userinfo.substr(colon + 1));
  if (!password) return "the password in the URL is badly escaped";
  ep.password = std::move(*password);
  return {};
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  const auto parts = SplitUrl(url);
  if (!parts || !parts->has_userinfo) return std::string(url);
  const auto colon = parts->userinfo.find(':');
  const std::size_t user_at = static_cast<std::size_t>(parts->userinfo.data() - url.data());
  std::string out(url.substr(0, user_at));
  out += parts->userinfo.substr(0, colon);
  if (colon != std::string_view::npos) out += ":***";
  out += url.substr(user_at + parts->userinfo.size());
  return out;
}

// Hand-written: cpp-httplib 0.11.4 has no public URL parser, and we need the pieces
// (path, port, userinfo) separately and a precise error for the operator. Strict and
// total: anything it does not understand is refused with a reason. @ref LLP 0017#urls
Result<Endpoint> ParseEndpoint(std::string_view url) {
  auto fail = [&](std::string msg) -> Result<Endpoint> {
    return Status::Config("url", "url '" + RedactUrl(url) + "': " + std::move(msg));
  };
  const std::optional<UrlParts> parts = SplitUrl(url);
  if (!parts) return fail("missing scheme (http:// or https://)");
  Endpoint ep;
  if (http_rules::IEquals(parts->scheme, "http")) {
    ep.scheme = "http";
    ep.port = 80;
  } else if (http_rules::IEquals(parts->scheme, "https")) {
    ep.scheme = "https";
    ep.port = 443;
  } else {
    return fail("scheme must be http or https");
  }
  if (url.find('#') != std::string_view::npos) return fail("fragments are not allowed");
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f) {
      return fail("the URL contains spaces, control or non-ASCII characters (percent-encode them)");
    }
  }
  if (parts->has_userinfo) {
    if (std::string e = ParseUserinfo(parts->userinfo, ep); !e.empty()) return fail(e);
  }
  if (std::string e = ParseHostPort(parts->hostport, ep); !e.empty()) return fail(e);
  ep.path = std::string(parts->path_and_query);
  if (ep.path.empty() || ep.path.front() == '?') ep.path.insert(0, "/");
  return ep;
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    if (IsUnreserved(c)) {
      out.push_back(c);
      continue;
    }
    const auto b = static_cast<unsigned char>(c);
    out += {'%', kHex[b >> 4], kHex[b & 15]};
  }
  return out;
}

namespace url {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string DecodeQueryValue(std::string_view v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '+') {
      out += ' ';
    } else if (v[i] == '%' && i + 2 < v.size() && HexValue(v[i + 1]) >= 0 &&
               HexValue(v[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(v[i + 1]) * 16 + HexValue(v[i + 2]));
      i += 2;
    } else {
      out += v[i];
    }
  }
  return out;
}

}  // namespace url

}  // namespace fwdsink
