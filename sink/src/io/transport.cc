// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/transport.h"

#include <httplib.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "io/deadline_timer.h"
#include "io/head_filter_client.h"
#include "io/http_rules.h"
#include "io/response_head.h"

namespace fwdsink {
namespace {

// Keeps the rate-limit headers (bounded: a server cannot make us keep many).
void CollectRateLimit(const httplib::Headers& headers, HeaderList& out) {
  constexpr std::size_t kMaxHeaders = 16;
  constexpr std::size_t kMaxValue = 512;
  for (const auto& [name, value] : headers) {
    if (out.size() >= kMaxHeaders) break;
    if (http_rules::IStartsWith(name, "ratelimit") ||
        http_rules::IStartsWith(name, "x-ratelimit")) {
      out.emplace_back(name, value.substr(0, kMaxValue));
    }
  }
}

// Holds a dup() of the client's current socket so Abort() can shutdown() it from any
// thread without touching cpp-httplib's internals or its socket mutex (which it holds
// while connecting, so ClientImpl::stop() would block for the whole connect timeout).
// @ref LLP 0014#abort-by-shutdown
class SocketHandle {
 public:
  ~SocketHandle() { Release(); }

  // Called by cpp-httplib right after it creates a socket, before connect().
  void Adopt(int fd) {
    std::lock_guard lock(mu_);
    ReleaseLocked();
    dup_ = ::dup(fd);
    if ((aborted_ || interrupted_) && dup_ >= 0) ::shutdown(dup_, SHUT_RDWR);
  }
  // Shuts the current request's connection down, like Abort() but not sticky: the
  // next request starts afresh. Called by the deadline watchdog.
  void Interrupt() {
    std::lock_guard lock(mu_);
    interrupted_ = true;
    if (dup_ < 0) return;
    // Linger 0: the last close() resets the connection and discards what is still
    // queued to send, instead of draining megabytes into a server that reads at a
    // crawl (a FIN would wait behind them). @ref LLP 0023#deadlines
    const linger reset{.l_onoff = 1, .l_linger = 0};
    ::setsockopt(dup_, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::shutdown(dup_, SHUT_RDWR);
  }
  // Forgets an Interrupt(); called before each request.
  void ClearInterrupt() {
    std::lock_guard lock(mu_);
    interrupted_ = false;
  }
  // Drops our duplicate once cpp-httplib has closed its socket, so the peer sees FIN.
  void Release() {
    std::lock_guard lock(mu_);
    ReleaseLocked();
  }
  void Abort() {
    std::lock_guard lock(mu_);
    aborted_ = true;
    // shutdown() on a SYN_SENT socket aborts the connect; on a connected one it wakes
    // any poll/recv/send at once.
    if (dup_ >= 0) ::shutdown(dup_, SHUT_RDWR);
  }
  bool aborted() const {
    std::lock_guard lock(mu_);
    return aborted_;
  }

 private:
  void ReleaseLocked() {
    if (dup_ >= 0) ::close(dup_);
    dup_ = -1;
  }
  mutable std::mutex mu_;
  int dup_ = -1;              // guarded by mu_
  bool aborted_ = false;      // guarded by mu_
  bool interrupted_ = false;  // guarded by mu_
};

using SteadyTime = std::chrono::steady_clock::time_point;

// How long a request with "Expect: 100-continue" waits for 100 Continue before its body
// goes anyway (a server may ignore the header): curl's default. @ref LLP 0017#expect-continue
constexpr std::chrono::milliseconds kContinueWait = std::chrono::seconds{1};

// The two deadlines of one request. @ref LLP 0023#deadlines
struct RequestDeadlines {
  SteadyTime headers;  // status line and headers in by then
  SteadyTime total;    // the whole response in by then
};

std::chrono::milliseconds TransferAllowance(std::uint64_t bytes, std::uint64_t bytes_per_s) {
  const std::uint64_t per_s = std::max<std::uint64_t>(bytes_per_s, 1);
  // bytes < 2^64 / 1000 for anything we send; saturate anyway.
  const std::uint64_t ms = bytes > UINT64_MAX / 1000 ? UINT64_MAX / per_s : bytes * 1000 / per_s;
  return std::chrono::milliseconds(std::min<std::uint64_t>(ms, 365ull * 24 * 3600 * 1000));
}

RequestDeadlines DeadlinesFor(SteadyTime start, std::uint64_t body_bytes, const TransportOptions& o,
                              const PostLimits& limits) {
  const auto upload = TransferAllowance(body_bytes, o.min_throughput_bytes_per_s);
  const auto download =
      TransferAllowance(o.body_prefix_bytes + o.drain_limit_bytes, o.min_throughput_bytes_per_s);
  RequestDeadlines d;
  d.headers = start + o.connect_timeout + upload + o.response_timeout;
  d.total = d.headers + download;
  if (limits.time_left) {
    // Never less than a moment: the caller checked its budget before calling.
    const auto cap = start + std::max(*limits.time_left, std::chrono::milliseconds(50));
    d.headers = std::min(d.headers, cap);
    d.total = std::min(d.total, cap);
  }
  return d;
}

// Enforces a request's deadlines: arms the process's DeadlineTimer for the armed
// deadline and, when it passes, shuts the request's socket down through the
// Abort-by-shutdown path (LLP 0014#abort-by-shutdown), which makes cpp-httplib fail the
// request and close the connection, so an abandoned attempt never goes on draining into
// the server. The timer is shared: a thread of its own per connection was one more
// thread per request in flight. @ref LLP 0014#threads
// Threads: Arm()/Disarm() from the sending thread; the timer's thread fires.
class Watchdog {
 public:
  explicit Watchdog(SocketHandle& socket) : socket_(socket) {}
  ~Watchdog() { Cancel(); }

  // Arms (or moves) the deadline; `what` names it in the error message.
  void Arm(SteadyTime deadline, std::string_view what) {
    if (!timer_) timer_ = DeadlineTimer::Shared();
    Cancel();
    armed_ = timer_->Arm(deadline, [this, what] {
      {
        std::lock_guard lock(mu_);
        fired_ = what;
      }
      socket_.Interrupt();
    });
  }
  // Disarms; returns what fired, if a deadline did since the last Disarm().
  std::optional<std::string_view> Disarm() {
    Cancel();
    std::lock_guard lock(mu_);
    return std::exchange(fired_, std::nullopt);
  }

 private:
  // Waits out a firing deadline, so that its function never outlives this watchdog.
  void Cancel() {
    if (armed_ != 0) timer_->Cancel(std::exchange(armed_, 0));
  }

  SocketHandle& socket_;                  // Not owned; outlives the watchdog.
  std::shared_ptr<DeadlineTimer> timer_;  // taken by the first Arm()
  DeadlineTimer::Id armed_ = 0;           // sending thread
  std::mutex mu_;
  std::optional<std::string_view> fired_;  // guarded by mu_ (static strings only)
};

class HttplibTransport final : public HttpTransport {
 public:
  HttplibTransport(Endpoint ep, const TransportOptions& opt, std::optional<Endpoint> proxy)
      : ep_(std::move(ep)),
        opt_(opt),
        // @ref LLP 0023#response-heads — 1xx skipped, heads bounded.
        client_(internal::MakeHeadFilterClient(ep_.scheme == "https", ep_.host, ep_.port,
                                               opt_.client_cert_file, opt_.client_key_file,
                                               kContinueWait, head_)) {
    client_->set_keep_alive(true);
    client_->set_tcp_nodelay(true);
    client_->set_connection_timeout(opt_.connect_timeout);
    client_->set_read_timeout(opt_.read_timeout);
    client_->set_write_timeout(opt_.write_timeout);
    client_->set_follow_location(false);
    client_->set_decompress(false);
    // The path and query go out as the operator wrote them (ParseEndpoint refused
    // spaces, controls and non-ASCII): cpp-httplib would otherwise turn the '+' of
    // "?query=INSERT+INTO+t" into %2B, and ClickHouse would read a literal '+'.
    // @ref LLP 0017#urls
    client_->set_url_encode(false);
    client_->set_socket_options([this](socket_t fd) { socket_.Adopt(fd); });
    if (ep_.scheme == "https") {
      client_->enable_server_certificate_verification(opt_.verify_tls);
      if (!opt_.ca_file.empty() || !opt_.ca_dir.empty()) {
        client_->set_ca_cert_path(opt_.ca_file, opt_.ca_dir);
      }
    }
    // @ref LLP 0017#request-options — cpp-httplib tunnels https with CONNECT and sends http in
    // absolute form.
    if (proxy) {
      client_->set_proxy(proxy->host, proxy->port);
      if (proxy->username) {
        client_->set_proxy_basic_auth(*proxy->username, proxy->password.value_or(""));
      }
    }
  }

  TransportResult Post(const HeaderList& headers, std::string& body, std::string_view query_param,
                       const PostLimits& limits) override {
    if (socket_.aborted()) return Closed();
    TransportResult out;
    // @ref LLP 0023#deadlines
    const auto start = std::chrono::steady_clock::now();
    const RequestDeadlines deadlines = DeadlinesFor(start, body.size(), opt_, limits);
    socket_.ClearInterrupt();
    watchdog_.Arm(deadlines.headers, "response headers");
    httplib::Request req = Head(headers, body.size(), query_param, limits.allow_expect);
    out.expect_sent = req.has_header("Expect");
    SendInPlace(req, body);
    // The head filter moves it on from the head; a request that fails before it gets
    // there failed connecting. @ref LLP 0014#transport-phases
    head_ = {};

    ReadBounded(req, out.response, deadlines);
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const bool had_connection = client_->is_socket_open();
    const bool ok = client_->send(req, res, err);
    const std::optional<std::string_view> late = watchdog_.Disarm();
    if (late && !ok) client_->stop();  // make sure the abandoned connection is closed
    // The server answered without reading a body cpp-httplib believes it sent: the
    // connection cannot carry another request. @ref LLP 0017#expect-continue
    out.body_withheld = head_.body_withheld;
    out.continue_wait_expired = head_.continue_timed_out;
    if (head_.body_withheld) client_->stop();
    if (!client_->is_socket_open()) socket_.Release();

    if (head_.too_large) return HeadersTooLarge();
    if (ok || (err == httplib::Error::Canceled && out.response.body_truncated)) {
      KeepHeaders(res, out.response);
      return out;
    }
    // Only Abort() aborts: the decision is our flag's, never an error code from below.
    // @ref LLP 0014#only-close-aborts
    if (socket_.aborted()) return Closed();
    TransportResult failed =
        late ? Late(*late, (*late == "response" ? deadlines.total : deadlines.headers) - start)
             : Failed(err);
    failed.phase = head_.phase;
    failed.expect_sent = out.expect_sent;
    failed.continue_wait_expired = out.continue_wait_expired;
    // A kept-alive connection that cpp-httplib found dead and could not make again: the
    // peer went away between two requests. @ref LLP 0014#reconnect
    failed.connection_lost = had_connection && failed.phase == WirePhase::kConnect;
    return failed;
  }

  // Reads the response into `r`: a bounded prefix of the body kept, the rest drained up
  // to the limit; once the headers are in, the whole response's deadline is armed.
  // @ref LLP 0014#drain-before-waiting
  void ReadBounded(httplib::Request& req, HttpResponse& r, const RequestDeadlines& deadlines) {
    const std::size_t prefix_cap = opt_.body_prefix_bytes;
    const std::uint64_t drain_cap = opt_.body_prefix_bytes + opt_.drain_limit_bytes;
    req.content_receiver = [&r, prefix_cap, drain_cap](const char* data, std::size_t n,
                                                       std::uint64_t, std::uint64_t) {
      if (r.body_prefix.size() < prefix_cap) {
        r.body_prefix.append(data, std::min(n, prefix_cap - r.body_prefix.size()));
      }
      r.body_bytes += n;
      if (r.body_bytes > drain_cap) {
        r.body_truncated = true;
        return false;  // stop reading; cpp-httplib closes the connection
      }
      return true;
    };
    req.response_handler = [this, total = deadlines.total](const httplib::Response&) {
      watchdog_.Arm(total, "response");  // the headers are in: now the body
      head_.phase = WirePhase::kResponseBody;
      return true;
    };
  }

  void Abort() override { socket_.Abort(); }
  const Endpoint& endpoint() const override { return ep_; }

 private:
  // The request's method, path (with `query_param`) and headers, no body yet.
  httplib::Request Head(const HeaderList& headers, std::size_t body_bytes,
                        std::string_view query_param, bool allow_expect) const {
    httplib::Request req;
    req.method = "POST";
    req.path = ep_.path;
    if (!query_param.empty()) {
      req.path += ep_.path.find('?') == std::string::npos ? '?' : '&';
      req.path += query_param;
    }
    for (const auto& [k, v] : headers) req.headers.emplace(k, v);
    // @ref LLP 0017#expect-continue — a refusal then costs the head, not the body.
    if (allow_expect && opt_.expect_continue_bytes > 0 &&
        body_bytes >= opt_.expect_continue_bytes) {
      req.headers.emplace("Expect", "100-continue");
    }
    return req;
  }

  // The body goes out through a content provider that reads `body` where it lies: in
  // `req.body` it would be copied once more per request by cpp-httplib 0.11 (its
  // handle_request keeps a copy of the request for redirects). `body` must outlive the
  // send. @ref LLP 0017#body-in-place
  static void SendInPlace(httplib::Request& req, const std::string& body) {
    req.content_length_ = body.size();
    req.content_provider_ = [&body](std::size_t offset, std::size_t length,
                                    httplib::DataSink& sink) {
      return sink.write(body.data() + offset, length);
    };
  }

  // Copies the status and the headers the verdict and the pacer read.
  static void KeepHeaders(const httplib::Response& res, HttpResponse& r) {
    r.status = res.status;
    if (res.has_header("Retry-After")) r.retry_after = res.get_header_value("Retry-After");
    if (res.has_header("X-ClickHouse-Exception-Code")) {
      r.clickhouse_exception_code = res.get_header_value("X-ClickHouse-Exception-Code");
    }
    CollectRateLimit(res.headers, r.rate_limit);
  }

  // More response head than kMaxResponseHeadBytes: the connection is closed unread.
  TransportResult HeadersTooLarge() const {
    TransportResult out;
    out.error = TransportError::kHeadersTooLarge;
    out.message = "POST " + ep_.SchemeHostPort() + ep_.path + ": more than " +
                  std::to_string(internal::kMaxResponseHeadBytes / 1024) +
                  " KiB of response headers; connection closed";
    return out;
  }

  static TransportResult Closed() {
    return {.error = TransportError::kAborted,
            .message = "transport closed",
            .response = {},
            .body_withheld = false};
  }

  // A request cut off by its deadline (@ref LLP 0023#deadlines).
  TransportResult Late(std::string_view what, std::chrono::steady_clock::duration allowed) const {
    TransportResult out;
    out.error = TransportError::kTimeout;
    out.message =
        "POST " + ep_.SchemeHostPort() + ep_.path + ": " + std::string(what) +
        " not received within the deadline of " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(allowed).count()) +
        " ms; connection closed";
    return out;
  }

  // Maps cpp-httplib's error to ours, with a sentence for an operator.
  TransportResult Failed(httplib::Error err) {
    TransportResult out;
    out.message = httplib::to_string(err);
    switch (err) {
      case httplib::Error::Connection: out.error = TransportError::kConnect; break;
      case httplib::Error::ConnectionTimeout: out.error = TransportError::kTimeout; break;
      case httplib::Error::Read:
      case httplib::Error::Write:
        // cpp-httplib reports a read timeout as Read; the message says which.
        out.error = TransportError::kIo;
        break;
      case httplib::Error::SSLConnection:
      case httplib::Error::SSLLoadingCerts:
      case httplib::Error::SSLServerVerification: {
        out.error = TransportError::kTls;
        const auto* tls = dynamic_cast<const httplib::SSLClient*>(client_.get());
        const long v = tls ? tls->get_openssl_verify_result() : X509_V_OK;
        if (v != X509_V_OK) {
          out.message += std::string(": ") + X509_verify_cert_error_string(v);
        } else if (err == httplib::Error::SSLServerVerification) {
          // The chain verified, so cpp-httplib's own host check refused the name.
          out.message += ": certificate does not match host '" + ep_.host + "'";
        }
        break;
      }
      case httplib::Error::Canceled:
        // What cpp-httplib says when the body's content provider could not write: the
        // peer reset or closed the connection under the body. Abort() was ruled out by
        // the caller. @ref LLP 0014#only-close-aborts
        out.error = TransportError::kIo;
        out.message = "the connection broke under the request";
        break;
      default: out.error = TransportError::kProtocol; break;
    }
    out.message = "POST " + ep_.SchemeHostPort() + ep_.path + ": " + out.message;
    return out;
  }

  const Endpoint ep_;
  const TransportOptions opt_;
  SocketHandle socket_;         // declared before client_: outlives the client's callbacks
  Watchdog watchdog_{socket_};  // joined before socket_ goes
  internal::HeadReport head_;   // written by client_ inside send(); outlives it
  std::unique_ptr<httplib::ClientImpl> client_;
};

}  // namespace

std::string_view to_string(TransportError e) {
  switch (e) {
    case TransportError::kNone: return "none";
    case TransportError::kConnect: return "connect";
    case TransportError::kTimeout: return "timeout";
    case TransportError::kIo: return "io";
    case TransportError::kTls: return "tls";
    case TransportError::kAborted: return "aborted";
    case TransportError::kProtocol: return "protocol";
    case TransportError::kHeadersTooLarge: return "headers_too_large";
  }
  return "unknown";
}

std::string_view to_string(WirePhase p) {
  switch (p) {
    case WirePhase::kConnect: return "connect";
    case WirePhase::kHead: return "head";
    case WirePhase::kAwaitContinue: return "await_continue";
    case WirePhase::kBody: return "body";
    case WirePhase::kResponseHead: return "response_head";
    case WirePhase::kResponseBody: return "response_body";
  }
  return "unknown";
}

Result<std::unique_ptr<HttpTransport>> HttpTransport::Create(std::string_view url,
                                                             const TransportOptions& options) {
  Result<Endpoint> ep = ParseEndpoint(url);
  if (!ep.ok()) return std::move(ep).status();
  std::error_code ec;
  if (!options.ca_file.empty() && !std::filesystem::is_regular_file(options.ca_file, ec)) {
    return Status::Config("ca_file", "ca_file '" + options.ca_file + "' is not a readable file");
  }
  if (!options.ca_dir.empty() && !std::filesystem::is_directory(options.ca_dir, ec)) {
    return Status::Config("ca_dir", "ca_dir '" + options.ca_dir + "' is not a directory");
  }
  if (options.client_cert_file.empty() != options.client_key_file.empty()) {
    return Status::Config("client_cert_file",
                          "a client certificate needs its key, and a key its certificate");
  }
  for (const std::string* f : {&options.client_cert_file, &options.client_key_file}) {
    if (!f->empty() && !std::filesystem::is_regular_file(*f, ec)) {
      return Status::Config(f == &options.client_cert_file ? "client_cert_file" : "client_key_file",
                            "'" + *f + "' is not a readable file");
    }
  }
  if (!options.client_cert_file.empty() && ep->scheme != "https") {
    return Status::Config("client_cert_file", "a client certificate needs an https:// URL");
  }
  std::optional<Endpoint> proxy;
  if (!options.proxy.empty()) {
    Result<Endpoint> parsed = ParseEndpoint(options.proxy);
    if (!parsed.ok()) return Status::Config("proxy", "proxy: " + parsed.status().message());
    if (parsed->scheme != "http")
      return Status::Config("proxy", "the proxy must be an http:// URL");
    proxy = std::move(*parsed);
  }
  return std::unique_ptr<HttpTransport>(
      std::make_unique<HttplibTransport>(std::move(*ep), options, std::move(proxy)));
}

}  // namespace fwdsink
