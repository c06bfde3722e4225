// SPDX-License-Identifier: Apache-2.0
// The HTTP(S) transport: one keep-alive connection to one endpoint, with bounded
// reading of response bodies and an abort that works from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fwdsink/status.h"

namespace fwdsink {

// A parsed endpoint URL: scheme://[user[:password]@]host[:port][/path][?query].
struct Endpoint {
  std::string scheme;  // "http" | "https"
  std::string host;    // without brackets for IPv6
  int port = 0;
  std::string path;  // always starts with '/'; the query, if any, follows it ("/?q=1")
  // Userinfo, percent-decoded: sent as HTTP Basic auth, never logged.
  std::optional<std::string> username;
  std::optional<std::string> password;
  // Returns "scheme://host:port" as cpp-httplib's Client wants it.
  [[nodiscard]] std::string SchemeHostPort() const;
};

// Parses a URL; returns a kInvalidConfig status with field "url" and a sentence when it
// is not one we can use (scheme other than http/https, empty or malformed host, bad
// port, fragment, spaces or control characters). Accepts a query with no path
// ("http://h?x=1" is "/?x=1" on host "h"), IPv6 literals ("http://[::1]:8080/x") and
// userinfo. Total: every input gets an Endpoint or a status; messages show the URL with
// its password redacted. @ref LLP 0017#urls
[[nodiscard]] Result<Endpoint> ParseEndpoint(std::string_view url);

// Returns `url` with the password of its userinfo (if any) replaced by "***", for logs:
// "http://u:***@h/x". A URL without userinfo comes back unchanged.
[[nodiscard]] std::string RedactUrl(std::string_view url);

// Checks one request header field supplied by configuration: the name must be an RFC
// 9110 token, the value a field-value (visible ASCII, obs-text, spaces and tabs inside,
// none at either end; never CR, LF or NUL). `source` names where it came from
// ("--header", "--header-file /run/key") and is the status's field. The value is never
// quoted in the message: it may be a secret.
[[nodiscard]] Status ValidateHeaderField(std::string_view name, std::string_view value,
                                         std::string_view source);

// Returns "Basic base64(user:password)" (RFC 7617).
[[nodiscard]] std::string BasicAuthorization(std::string_view user, std::string_view password);

struct TransportOptions {
  // Time allowed to establish a TCP (and TLS) connection.
  std::chrono::milliseconds connect_timeout = std::chrono::seconds{5};
  // Longest silence while waiting for (or reading) a response.
  std::chrono::milliseconds read_timeout = std::chrono::seconds{30};
  // Longest stall while writing a request.
  std::chrono::milliseconds write_timeout = std::chrono::seconds{30};
  // Slowest transfer accepted: a request body of N bytes is allowed N / this many
  // seconds to go out (and a response body as long as the drain limit as long to come
  // in). Idle timeouts reset on every byte; this is what bounds a server that drips.
  // @ref LLP 0023#deadlines
  std::uint64_t min_throughput_bytes_per_s = 32 * 1024;
  // Response-header deadline: the response's status line and headers must have arrived
  // this long after the connect timeout plus the body's upload allowance, whatever
  // trickles in meanwhile. The whole response is due by then plus its body allowance.
  std::chrono::milliseconds response_timeout = std::chrono::seconds{30};
  // Verify the server's certificate chain and host name (https only). Leave on.
  bool verify_tls = true;
  // CA bundle file and/or directory; both empty means the system's default store.
  std::string ca_file;
  std::string ca_dir;
  // Client certificate and its private key (PEM files) for mutual TLS; both or neither.
  std::string client_cert_file{};
  std::string client_key_file{};
  // HTTP proxy, "http://[user:password@]host:port"; empty means none. An https endpoint
  // is reached through the proxy with CONNECT (cpp-httplib's SSLClient).
  std::string proxy{};
  // Bytes of a response body kept for the caller (enough for details.reason).
  std::size_t body_prefix_bytes = 4096;
  // Bytes read and discarded past the prefix so the connection can be reused; a longer
  // body closes the connection instead of being read to the end.
  std::size_t drain_limit_bytes = 1 << 20;
  // A request body of at least this many bytes that its caller lets carry "Expect:
  // 100-continue" (PostLimits::allow_expect; the forward sink does while a refusal is
  // likely, ForwardOptions::expect_continue) is sent with it: the body goes after the
  // server's 100 Continue, or after 1 s without an answer (a server may ignore the
  // header); a final response that comes first (429, 503, 413, 401) is the answer, the
  // body is never sent and the connection is closed. 0: never.
  // @ref LLP 0017#expect-continue
  std::uint64_t expect_continue_bytes = 64 * 1024;
  // A connection with no request for this long is closed, and the thread that posts on
  // it ends; 0 keeps it until the sink goes. Under the idle timeouts of common fronts
  // (nginx 75 s), over the driver's pauses between passes. @ref LLP 0014#threads
  std::chrono::milliseconds keep_alive = std::chrono::seconds{30};
};

enum class TransportError {
  kNone,
  kConnect,   // could not connect (refused, unreachable, DNS)
  kTimeout,   // connect, read or write timed out
  kIo,        // the connection broke while sending or receiving
  kTls,       // TLS handshake or certificate/host verification failed
  kAborted,   // Abort() was called (and nothing else: @ref LLP 0014#only-close-aborts)
  kProtocol,  // the peer sent something that is not HTTP
  // more than 64 KiB of response heads (1xx included); @ref LLP 0023#response-heads
  kHeadersTooLarge,
};
[[nodiscard]] std::string_view to_string(TransportError e);

// Where on the wire a request failed, for an operator behind a middlebox: a reset in
// the head, while the body waits for 100 Continue, mid-body, or before or inside the
// response tell different stories (a proxy restarting, a front refusing Expect, a
// server that died while answering). @ref LLP 0014#transport-phases
enum class WirePhase {
  kConnect,        // opening the TCP (and TLS) connection
  kHead,           // writing the request line and headers
  kAwaitContinue,  // head written with "Expect: 100-continue", waiting for the answer
  kBody,           // writing the request body
  kResponseHead,   // waiting for or reading the response's status line and headers
  kResponseBody,   // reading the response body
};
[[nodiscard]] std::string_view to_string(WirePhase p);

// Percent-encodes everything but RFC 3986 unreserved characters, for a query value.
[[nodiscard]] std::string PercentEncode(std::string_view text);

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
  int status = 0;
  std::optional<std::string> retry_after;                // raw header value, if present
  std::optional<std::string> clickhouse_exception_code;  // X-ClickHouse-Exception-Code
  // RateLimit-* and X-RateLimit-* headers as received (name, value), at most 16, for
  // the pacer's advertised quota. @ref LLP 0016#advertised
  HeaderList rate_limit;
  std::string body_prefix;       // at most body_prefix_bytes of the body
  std::uint64_t body_bytes = 0;  // bytes of body read (prefix + drained)
  bool body_truncated = false;   // the body was longer than the drain limit
};

struct TransportResult {
  TransportError error = TransportError::kNone;
  std::string message;    // why, for an operator (empty on success)
  HttpResponse response;  // meaningful when error == kNone
  // The server answered before 100 Continue, so the body was never sent
  // (TransportOptions::expect_continue_bytes).
  bool body_withheld = false;
  // The request's head carried "Expect: 100-continue" (a 417 to it means: repeat the
  // request without the expectation, RFC 9110 §10.1.1).
  bool expect_sent = false;
  // The wait for 100 Continue ran out with neither a 100 nor a final status, and the
  // body went after it: the endpoint (or a front before it) ignores the header.
  // @ref LLP 0017#expect-continue
  bool continue_wait_expired = false;
  // Where the request failed (meaningful when error != kNone).
  WirePhase phase = WirePhase::kConnect;
  // The request found the connection the last one left open closed by the peer (a
  // front that restarted, an idle timeout), and had to connect anew.
  bool connection_lost = false;
};

// Per-request limits from the caller.
struct PostLimits {
  // Time the caller has left for this attempt (its inline budget); caps both deadlines.
  std::optional<std::chrono::milliseconds> time_left{};
  // Whether this request may carry "Expect: 100-continue" (its body must also reach
  // TransportOptions::expect_continue_bytes). The forward sink lets it while a refusal
  // is likely, never once the endpoint answered one with 417 or ignored it.
  // @ref LLP 0017#expect-continue @ref LLP 0017#expect-417
  bool allow_expect = true;
};

// A client for one endpoint. Post() is called by one sending thread at a time; Abort()
// may be called from any thread, any number of times, and is sticky: every later Post()
// fails with kAborted at once. kAborted means Abort() and nothing else: a connection
// that breaks under a request (reset, EOF, a failed body write) is kIo with the phase
// it broke in, whatever cpp-httplib calls it. Response bodies are never buffered past
// the prefix.
class HttpTransport {
 public:
  // Creates a transport for `url`; returns a kInvalidConfig status naming the field
  // ("url", "ca_file", "ca_dir", "client_cert_file", "proxy") on a bad URL or unusable
  // TLS or proxy settings.
  [[nodiscard]] static Result<std::unique_ptr<HttpTransport>> Create(
      std::string_view url, const TransportOptions& options);
  virtual ~HttpTransport() = default;

  // Sends one POST to the endpoint's path with `headers` and `body`; a non-empty
  // `query_param` ("name=value", already encoded) is appended to the URL's query. The
  // body is moved into the request and handed back unchanged in `body` when the call
  // returns, so a retry re-sends the identical bytes without a copy. The request is cut
  // off (kTimeout, its connection shut down and closed) when the response headers, or
  // the whole response, are not in by their deadlines (TransportOptions::response_timeout
  // and min_throughput_bytes_per_s, capped by `limits.time_left`).
  [[nodiscard]] virtual TransportResult Post(const HeaderList& headers, std::string& body,
                                             std::string_view query_param,
                                             const PostLimits& limits) = 0;

  // Shuts the connection down: an in-flight Post() (connecting, sending, or waiting
  // for headers) returns kAborted promptly. Never blocks on the sending thread.
  virtual void Abort() = 0;

  [[nodiscard]] virtual const Endpoint& endpoint() const = 0;
};

}  // namespace fwdsink
