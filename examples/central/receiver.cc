// SPDX-License-Identifier: Apache-2.0
#include "receiver.h"

#include <zstd.h>

#include <simdjson.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

namespace central {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr std::string_view kNdjson = "application/x-ndjson";
constexpr std::size_t kDecodeBuffer = 64 * 1024;
constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Fnv1aHex(std::string_view bytes) {
  std::uint64_t h = kFnvOffset;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= kFnvPrime;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

enum class DecodeError { kNone, kTooLarge, kBadEncoding };

// Inflates a zstd body (one or more frames) and stops as soon as the output passes
// max_out, so a tiny body that would inflate to gigabytes costs at most max_out bytes.
// @ref LLP 0011#bounded-decoding
DecodeError ZstdDecode(std::string_view wire, std::uint64_t max_out, std::string* out) {
  if (wire.empty()) return DecodeError::kNone;
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!dctx) return DecodeError::kBadEncoding;
  std::string buf(kDecodeBuffer, '\0');
  ZSTD_inBuffer in{wire.data(), wire.size(), 0};
  std::size_t last = 0;
  while (true) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(dctx.get(), &o, &in);
    if (ZSTD_isError(last)) return DecodeError::kBadEncoding;
    if (out->size() + o.pos > max_out) return DecodeError::kTooLarge;
    out->append(buf.data(), o.pos);
    // Done when all input is consumed and either the last frame ended (0) or the
    // decoder did not fill the buffer (no more output pending). Without the first test
    // a frame whose output ends exactly at the buffer's end was followed by one more
    // call that asked for a next frame's header and read as truncated.
    if (in.pos == in.size && (last == 0 || o.pos < o.size)) break;
  }
  // A non-zero hint means the last frame is incomplete: a truncated body.
  return last == 0 ? DecodeError::kNone : DecodeError::kBadEncoding;
}

// Checks that `lines` is whole lines, each a JSON object. Returns the row count, or
// sets *bad_line (1-based) / *unterminated. simdjson reads up to SIMDJSON_PADDING bytes
// past a document: the caller's buffer must have them after `lines`.
std::optional<std::uint64_t> CheckLines(std::string_view lines, std::uint64_t* bad_line,
                                        bool* unterminated) {
  thread_local simdjson::dom::parser parser;
  std::uint64_t rows = 0;
  while (!lines.empty()) {
    const auto nl = lines.find('\n');
    if (nl == std::string_view::npos) {
      *unterminated = true;
      return std::nullopt;
    }
    const std::string_view line = lines.substr(0, nl);
    lines.remove_prefix(nl + 1);
    ++rows;
    // Rows must be objects: a bare `1` or `"x"` is valid JSON but not a row. A blank
    // line is simdjson's EMPTY error.
    simdjson::dom::element row;
    if (parser.parse(line.data(), line.size(), false).get(row) || !row.is_object()) {
      *bad_line = rows;
      return std::nullopt;
    }
  }
  return rows;
}

// CheckLines over `body`, padded for the check and given back unchanged.
// @ref LLP 0011#row-check
std::optional<std::uint64_t> ValidateRows(std::string& body, std::uint64_t* bad_line,
                                          bool* unterminated) {
  const std::size_t size = body.size();
  body.append(simdjson::SIMDJSON_PADDING, ' ');
  auto rows = CheckLines(std::string_view(body.data(), size), bad_line, unterminated);
  body.resize(size);
  return rows;
}

// Error statuses that tell the client to back off and retry in place.
bool IsBackpressure(int status) { return status == 429 || status == 503; }

Decision MakeDecision(int status, std::string reason, std::string body) {
  Decision d;
  d.status = status;
  d.reason = std::move(reason);
  d.body = std::move(body);
  return d;
}

// A key already stored: success for the client, nothing stored or charged.
Decision Duplicate() { return MakeDecision(200, "duplicate", R"({"status":"duplicate"})"); }

}  // namespace

std::unique_ptr<Receiver> Receiver::Create(const Options& options, std::string* error) {
  std::unique_ptr<Receiver> r(new Receiver(options));
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) {
    *error = "--out: cannot create " + options.out_dir.string() + ": " + ec.message();
    return nullptr;
  }
  // A restarted receiver still dedupes: it reloads every key it ever accepted.
  // @ref LLP 0011#dedupe
  const auto keys_path = options.out_dir / "keys.log";
  {
    std::ifstream in(keys_path);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) r->keys_seen_.insert(line);
    }
  }
  auto open = [&](const std::filesystem::path& p, const char* flag) -> std::FILE* {
    std::FILE* f = std::fopen(p.c_str(), "ab");
    if (f == nullptr && error->empty()) {
      *error = std::string(flag) + ": cannot open " + p.string() + ": " + std::strerror(errno);
    }
    return f;
  };
  r->received_ = open(options.out_dir / "received.ndjson", "--out");
  r->keys_ = open(keys_path, "--out");
  if (options.request_log) r->request_log_ = open(*options.request_log, "--request-log");
  if (!error->empty()) return nullptr;
  return r;
}

Receiver::Receiver(const Options& options)
    : options_(options),
      start_(Clock::now()),
      tokens_(static_cast<double>(options.burst_bytes.value_or(0))),
      tokens_at_(start_) {}

Receiver::~Receiver() {
  for (std::FILE* f : {received_, keys_, request_log_}) {
    if (f != nullptr) std::fclose(f);
  }
}

void Receiver::Register(httplib::Server& server) {
  // @ref LLP 0011#expect-continue
  server.set_expect_100_continue_handler(
      [this](const httplib::Request& req, httplib::Response& res) {
        return HandleExpect(req, res);
      });
  server.Post(".*", [this](const httplib::Request& req, httplib::Response& res,
                           const httplib::ContentReader& reader) { HandlePost(req, res, reader); });
  server.Get("/stats", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(StatsJson(), "application/json");
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
}

void Receiver::BeginShutdown() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
}

void Receiver::FlushAndLockForExit() {
  mu_.lock();  // never unlocked: the process exits next
  for (std::FILE* f : {received_, keys_, request_log_}) {
    if (f != nullptr) std::fflush(f);
  }
}

namespace {
// A POST's body as read from the wire.
struct WireBody {
  std::string bytes;
  bool read_ok = false;
  bool too_large = false;  // past --max-body, by its Content-Length or as it was read
};

// Reads a POST's body to its end, or up to `max_body` bytes. httplib itself skips
// (reads and drops) a body whose Content-Length is past the payload limit we configured
// (= --max-body).
WireBody ReadWire(const httplib::Request& req, const httplib::ContentReader& reader,
                  std::uint64_t max_body) {
  WireBody body;
  body.read_ok = reader([&](const char* data, std::size_t n) {
    if (body.bytes.size() + n > max_body) {
      body.too_large = true;  // chunked upload past the limit
      return false;
    }
    body.bytes.append(data, n);
    return true;
  });
  if (req.has_header("Content-Length") &&
      req.get_header_value<std::uint64_t>("Content-Length") > max_body) {
    body.too_large = true;
  }
  return body;
}
}  // namespace

void Receiver::HoldHeaders() {
  // Counted while held, so a test can wait for "the body is read, the client waits
  // for headers" before timing an abort. @ref LLP 0011#header-delay
  {
    std::lock_guard lock(mu_);
    ++stats_.held;
  }
  {
    // Interruptible so that SIGTERM ends a "hung" server at once. @ref LLP 0011#shutdown
    std::unique_lock lock(stop_mu_);
    stop_cv_.wait_for(lock, *options_.header_delay, [this] { return stopping_; });
  }
  std::lock_guard lock(mu_);
  --stats_.held;
}

void Receiver::HandlePost(const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader) {
  // A request with Expect: 100-continue was numbered (and charged) when its head was
  // decided. @ref LLP 0011#expect-continue
  const ExpectClaim claim = TakeExpectClaim(req);
  std::uint64_t post_number = claim.number;
  if (post_number == 0) {
    std::lock_guard lock(mu_);
    post_number = ++post_count_;
    ++stats_.requests;
  }

  // Always read the body, even for a request about to be refused, so the keep-alive
  // connection stays usable.
  const WireBody body = ReadWire(req, reader, options_.max_body);
  const std::string& wire = body.bytes;

  // Bodies read and not yet answered, and their peak: what a client's in-flight cap
  // bounds, seen from this side. @ref LLP 0011#open-bodies
  {
    std::lock_guard lock(mu_);
    stats_.open_body_bytes += wire.size();
    stats_.peak_open_body_bytes = std::max(stats_.peak_open_body_bytes, stats_.open_body_bytes);
  }
  struct Close {
    Receiver& r;
    std::uint64_t n;
    ~Close() {
      std::lock_guard lock(r.mu_);
      r.stats_.open_body_bytes -= n;
    }
  } const closed{*this, wire.size()};

  if (options_.header_delay && DelayApplies(post_number)) HoldHeaders();

  const std::string key = req.get_header_value(options_.key_header);
  std::string encoding = Lower(Trim(req.get_header_value("Content-Encoding")));
  if (encoding.empty()) encoding = "identity";
  Decision d = Decide(req, post_number, wire, body.read_ok, body.too_large, claim.reserved);
  if (claim.reserved > 0 && d.reason != "accepted" && d.reason != "storage_error") {
    std::lock_guard lock(mu_);
    tokens_ += static_cast<double>(claim.reserved);  // not stored: not charged
  }
  Apply(req, res, std::move(d), key, wire, encoding);
}

namespace {
// The claim HandleExpect made for the request this worker thread is handling: httplib
// runs the Expect hook and then the POST handler of one request on one thread.
thread_local ExpectClaim expect_claim;

bool ExpectsContinue(const httplib::Request& req) {
  return req.get_header_value("Expect") == "100-continue";  // httplib's own test
}
}  // namespace

ExpectClaim Receiver::TakeExpectClaim(const httplib::Request& req) {
  return ExpectsContinue(req) ? std::exchange(expect_claim, ExpectClaim{}) : ExpectClaim{};
}

// @ref LLP 0011#expect-continue
int Receiver::HandleExpect(const httplib::Request& req, httplib::Response& res) {
  std::uint64_t n = 0;
  {
    std::lock_guard lock(mu_);
    n = ++post_count_;
    ++stats_.requests;
  }
  std::optional<Decision> early = DecideHead(req, n);
  const std::string key = req.get_header_value(options_.key_header);
  const auto length = req.get_header_value<std::uint64_t>("Content-Length");
  if (!early && length > options_.max_body) {
    early = Refuse(413, "payload too large", "max_body", false);
  }
  std::uint64_t reserved = 0;
  if (!early) {
    std::lock_guard lock(mu_);
    if (!key.empty() && keys_seen_.contains(key)) {
      early = Duplicate();
    } else if (options_.rate_bytes_per_sec && req.has_header("Content-Length")) {
      early = Throttle(length);
      // Taken now, or bodies let through together would drain the bucket for each other
      // and be refused after all once they are in.
      if (!early && length > 0) {
        tokens_ -= static_cast<double>(length);
        reserved = length;
      }
    }
  }
  if (!early) {
    expect_claim = {.number = n, .reserved = reserved};
    return 100;
  }
  // The client sends no body after this answer; one that does anyway would have it read
  // as its next request, so it is told to close.
  res.set_header("Connection", "close");
  std::string encoding = Lower(Trim(req.get_header_value("Content-Encoding")));
  if (encoding.empty()) encoding = "identity";
  const int status = early->status;
  Apply(req, res, std::move(*early), key, std::string(), encoding);
  // httplib frames a response from this hook by the connection's end, which it keeps
  // open for the next request: say the length, or the client waits for the close.
  res.set_header("Content-Length", std::to_string(res.body.size()));
  return status;
}

Decision Receiver::Decide(const httplib::Request& req, std::uint64_t post_number,
                          const std::string& wire, bool read_ok, bool wire_too_large,
                          std::uint64_t reserved) {
  // Order: @ref LLP 0011#decision-order
  if (auto refused = DecideHead(req, post_number)) return *refused;
  if (wire_too_large) {
    return Refuse(413, "payload too large", "max_body", false);
  }
  if (!read_ok) {
    return Refuse(400, "bad request", "incomplete_body", false);
  }

  const std::string key = req.get_header_value(options_.key_header);
  if (!key.empty()) {
    std::lock_guard lock(mu_);
    if (keys_seen_.contains(key)) return Duplicate();
  }
  return DecideBody(key, wire, req.get_header_value("Content-Encoding"), reserved);
}

std::optional<Decision> Receiver::DecideHead(const httplib::Request& req,
                                             std::uint64_t post_number) {
  {
    std::lock_guard lock(stop_mu_);
    if (stopping_) {
      Decision d = Refuse(503, "shutting down", "shutting_down", false);
      d.retry_after = "1";
      return d;
    }
  }
  if (IsInjected(post_number)) {
    const int status = *options_.fail_status;
    Decision d = Refuse(status, "injected", options_.fail_reason, true);
    if (IsBackpressure(status)) d.retry_after = "1";
    return d;
  }
  if (auto refused = CheckAuth(req)) return *refused;

  const std::string media =
      Lower(Trim(req.get_header_value("Content-Type")
                     .substr(0, req.get_header_value("Content-Type").find(';'))));
  if (media != kNdjson) {
    return Refuse(415, "unsupported media type", "unsupported_media_type", false);
  }
  const std::string encoding = Lower(Trim(req.get_header_value("Content-Encoding")));
  if (encoding != "zstd" && !encoding.empty() && encoding != "identity") {
    return Refuse(415, "unsupported content encoding", "unsupported_encoding", false);
  }
  return std::nullopt;
}

Decision Receiver::DecideBody(const std::string& key, const std::string& wire,
                              const std::string& content_encoding, std::uint64_t reserved) {
  const bool zstd = Lower(Trim(content_encoding)) == "zstd";
  // Decode and validate outside the lock: the expensive part runs in parallel.
  std::string decoded;
  if (zstd) {
    switch (ZstdDecode(wire, options_.max_body, &decoded)) {
      case DecodeError::kNone: break;
      case DecodeError::kTooLarge: return Refuse(413, "payload too large", "max_body", false);
      case DecodeError::kBadEncoding: return Refuse(400, "bad encoding", "bad_encoding", false);
    }
  } else {
    decoded.reserve(wire.size() + simdjson::SIMDJSON_PADDING);
    decoded = wire;
  }
  std::uint64_t bad_line = 0;
  bool unterminated = false;
  auto rows = ValidateRows(decoded, &bad_line, &unterminated);
  if (!rows) {
    if (unterminated) {
      return Refuse(400, "malformed row", "unterminated_line", false);
    }
    json body = {{"error", "malformed row"},
                 {"details", {{"reason", "bad_row"}, {"line", bad_line}}}};
    return MakeDecision(400, "bad_row", body.dump());
  }
  return Admit(key, wire, decoded, *rows, reserved);
}

std::optional<Decision> Receiver::CheckAuth(const httplib::Request& req) {
  if (!options_.token && !options_.token_file) return std::nullopt;
  auto refuse = [this](const char* reason) { return Refuse(401, "unauthorized", reason, false); };
  const std::string header = req.get_header_value("Authorization");
  if (header.empty()) return refuse("missing_token");
  constexpr std::string_view kBearer = "bearer ";
  if (header.size() <= kBearer.size() || Lower(header.substr(0, kBearer.size())) != kBearer) {
    return refuse("bad_token");
  }
  const std::string presented(Trim(std::string_view(header).substr(kBearer.size())));

  // The token file is re-read per request so that a test can rotate the token.
  std::string current;
  if (options_.token) {
    current = *options_.token;
  } else {
    std::ifstream in(*options_.token_file);
    current.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    current = std::string(Trim(current));
  }

  // @ref LLP 0011#token-expiry
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  if (!current.empty() && presented == current) {
    const auto first = token_first_seen_.try_emplace(presented, now).first->second;
    if (options_.token_ttl && now - first >= *options_.token_ttl) return refuse("token_expired");
    return std::nullopt;
  }
  // A token that used to be current has been rotated away: it expired, it is not bad.
  if (token_first_seen_.contains(presented)) return refuse("token_expired");
  return refuse("bad_token");
}

// @ref LLP 0011#fault-injection
bool Receiver::IsInjected(std::uint64_t n) const {
  if (!options_.fail_status) return false;
  if (options_.fail_every && n % *options_.fail_every == 0) return true;
  if (options_.fail_first && n <= *options_.fail_first) return true;
  if (options_.fail_for && Clock::now() - start_ < *options_.fail_for) return true;
  return false;
}

bool Receiver::DelayApplies(std::uint64_t n) const {
  return !options_.header_delay_every || n % *options_.header_delay_every == 0;
}

// The token bucket as RateLimit advertises it: whole tokens left (never negative) and
// whole seconds until the bucket is full again. Called under mu_. @ref LLP 0016#central
std::pair<std::uint64_t, std::uint64_t> Receiver::BucketState(double rate, double burst) const {
  const double left = std::max(0.0, std::floor(tokens_));
  const double to_full = std::ceil(std::max(0.0, burst - tokens_) / rate);
  return {static_cast<std::uint64_t>(left), static_cast<std::uint64_t>(to_full)};
}

std::optional<Decision> Receiver::Throttle(std::uint64_t wire_bytes) {
  // @ref LLP 0011#token-bucket
  const double rate = static_cast<double>(*options_.rate_bytes_per_sec);
  const double burst = static_cast<double>(*options_.burst_bytes);
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - tokens_at_).count();
  tokens_ = std::min(burst, tokens_ + rate * std::max(0.0, elapsed));
  tokens_at_ = now;
  const double need = std::min(static_cast<double>(wire_bytes), burst);
  if (tokens_ >= need) return std::nullopt;
  const double wait = std::ceil((need - tokens_) / rate);
  const auto seconds = static_cast<long long>(std::max(1.0, wait));
  Decision d = Refuse(429, "rate limited", "byte_rate", true);
  d.retry_after = std::to_string(seconds);
  d.bucket = BucketState(rate, burst);
  return d;
}

Decision Receiver::Admit(const std::string& key, const std::string& wire,
                         const std::string& decoded, std::uint64_t rows, std::uint64_t reserved) {
  std::lock_guard lock(mu_);
  std::optional<std::pair<std::uint64_t, std::uint64_t>> bucket;
  // Re-check: a concurrent request with the same key may have been stored meanwhile.
  if (!key.empty() && keys_seen_.contains(key)) {
    return Duplicate();
  }
  if (options_.rate_bytes_per_sec) {
    if (reserved == 0) {  // else its head took the tokens (HandleExpect)
      if (auto throttled = Throttle(wire.size())) return *throttled;
      tokens_ -= static_cast<double>(wire.size());
    }
    bucket = BucketState(static_cast<double>(*options_.rate_bytes_per_sec),
                         static_cast<double>(*options_.burst_bytes));
  }
  // Rows first, key second: a crash in between re-stores on re-send rather than losing.
  bool ok = std::fwrite(decoded.data(), 1, decoded.size(), received_) == decoded.size() &&
            std::fflush(received_) == 0;
  if (ok && !key.empty()) {
    ok = std::fprintf(keys_, "%s\n", key.c_str()) > 0 && std::fflush(keys_) == 0;
    if (ok) keys_seen_.insert(key);
  }
  if (!ok) {
    std::cerr << "fwdsink-central: write failed: " << std::strerror(errno) << std::endl;
    return Refuse(500, "storage error", "storage_error", false);
  }
  stats_.accepted_rows += rows;
  stats_.bytes += wire.size();
  stats_.decoded_bytes += decoded.size();
  json body = {{"status", "accepted"}, {"rows", rows}};
  Decision d = MakeDecision(200, "accepted", body.dump());
  d.rows = rows;
  d.bucket = bucket;
  return d;
}

void Receiver::Apply(const httplib::Request& req, httplib::Response& res, Decision d,
                     const std::string& key, const std::string& wire, const std::string& encoding) {
  res.status = d.status;
  if (IsBackpressure(d.status) && !options_.no_retry_after) {
    auto value = options_.retry_after_raw ? options_.retry_after_raw : d.retry_after;
    if (value) res.set_header("Retry-After", *value);
  }
  if (options_.ratelimit_headers && d.bucket) {
    // @ref LLP 0016#central — q per w=1 s is the rate; `burst` (our extension
    // parameter, which other clients ignore) is the bucket size.
    res.set_header("RateLimit-Policy",
                   "\"bytes\";q=" + std::to_string(*options_.rate_bytes_per_sec) +
                       ";w=1;qu=\"content-bytes\";burst=" + std::to_string(*options_.burst_bytes));
    res.set_header("RateLimit", "\"bytes\";r=" + std::to_string(d.bucket->first) +
                                    ";t=" + std::to_string(d.bucket->second));
  }
  res.set_content(d.body, "application/json");

  std::lock_guard lock(mu_);
  if (d.reason == "accepted")
    ++stats_.accepted_chunks;
  else if (d.reason == "duplicate")
    ++stats_.duplicate_chunks;
  else if (d.reason == "byte_rate")
    ++stats_.throttled;
  else if (d.reason == "shutting_down")
    ++stats_.shutting_down;
  else if (d.reason == "storage_error")
    ++stats_.storage_errors;
  else if (d.status == 401)
    ++stats_.unauthorized;
  else if (d.status == 413)
    ++stats_.too_large;
  else if (d.status == 415)
    ++stats_.unsupported;
  else if (d.status == 400)
    ++stats_.bad_request;
  else
    ++stats_.injected;  // the only remaining source of a decision

  if (request_log_ != nullptr) {  // @ref LLP 0011#request-log
    const auto t_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
    json line = {
        {"t_ms", t_ms},         {"path", req.path},          {"key", key},
        {"status", d.status},   {"body_bytes", wire.size()}, {"body_fnv1a", Fnv1aHex(wire)},
        {"encoding", encoding}, {"reason", d.reason},        {"expect", ExpectsContinue(req)}};
    const std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::fwrite(text.data(), 1, text.size(), request_log_);
    std::fflush(request_log_);
  }
}

Decision Receiver::Refuse(int status, const std::string& error, const std::string& reason,
                          bool padded) const {
  return MakeDecision(status, reason, ErrorBody(error, reason, padded));
}

std::string Receiver::ErrorBody(const std::string& error, const std::string& reason,
                                bool padded) const {
  json body = {{"error", error}, {"details", {{"reason", reason}}}};
  std::string text = body.dump();
  // Pad inside a "pad" field so the body stays valid JSON: tests check that the client
  // drains a big error body. `,"pad":""` adds 9 bytes before any filler.
  constexpr std::size_t kPadOverhead = 9;
  if (padded && options_.error_body_bytes > text.size() + kPadOverhead) {
    body["pad"] = std::string(options_.error_body_bytes - text.size() - kPadOverhead, 'x');
    text = body.dump();
  }
  return text;
}

std::string Receiver::StatsJson() {
  std::lock_guard lock(mu_);
  json j = {{"requests", stats_.requests},
            {"accepted_chunks", stats_.accepted_chunks},
            {"duplicate_chunks", stats_.duplicate_chunks},
            {"accepted_rows", stats_.accepted_rows},
            {"throttled", stats_.throttled},
            {"injected", stats_.injected},
            {"unauthorized", stats_.unauthorized},
            {"too_large", stats_.too_large},
            {"bad_request", stats_.bad_request},
            {"unsupported", stats_.unsupported},
            {"shutting_down", stats_.shutting_down},
            {"storage_errors", stats_.storage_errors},
            {"bytes", stats_.bytes},
            {"decoded_bytes", stats_.decoded_bytes},
            {"known_keys", keys_seen_.size()},
            {"held", stats_.held},
            {"open_body_bytes", stats_.open_body_bytes},
            {"peak_open_body_bytes", stats_.peak_open_body_bytes}};
  return j.dump();
}

}  // namespace central
