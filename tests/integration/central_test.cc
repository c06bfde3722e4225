// SPDX-License-Identifier: Apache-2.0
// Integration tests of the reference receiver (fwdsink-central) itself, driven with plain
// httplib::Client requests over 127.0.0.1. The sink's own integration tests build on it,
// so its contract (statuses, reasons, Retry-After, storage) is pinned down here.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zstd.h>

#include <csignal>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/central_process.h"

namespace {

using fwdsink::test::CentralProcess;
using nlohmann::json;

constexpr char kNdjson[] = "application/x-ndjson";
constexpr auto kClientTimeout = std::chrono::seconds(5);
constexpr int kExitUsage = 64;

// Two rows, 16 bytes on the wire.
const std::string kTwoRows = "{\"a\":1}\n{\"b\":2}\n";

httplib::Client MakeClient(const CentralProcess& central) {
  httplib::Client cli("127.0.0.1", central.port());
  cli.set_connection_timeout(kClientTimeout);
  cli.set_read_timeout(kClientTimeout);
  return cli;
}

httplib::Result Post(httplib::Client& cli, const std::string& body, const std::string& key,
                     httplib::Headers headers = {}) {
  if (!key.empty()) headers.emplace("Idempotency-Key", key);
  return cli.Post("/ingest", headers, body, kNdjson);
}

std::string Zstd(const std::string& plain) {
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  const std::size_t n = ZSTD_compress(out.data(), out.size(), plain.data(), plain.size(), 1);
  REQUIRE_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::string Reason(const httplib::Result& res) {
  auto j = json::parse(res->body, nullptr, false);
  return j.is_object() && j.contains("details") ? j["details"].value("reason", "") : "";
}

// A body of whole rows of exactly `bytes` bytes (bytes >= 9).
std::string RowsOfSize(std::size_t bytes) {
  const std::string head = "{\"p\":\"";
  const std::string tail = "\"}\n";
  return head + std::string(bytes - head.size() - tail.size(), 'x') + tail;
}

}  // namespace

TEST_CASE("central stores an accepted chunk once and answers a repeated key as duplicate") {
  CentralProcess central(CentralProcess::ScratchDir("central_dedupe"));
  // A burst of exactly two chunks: if duplicates were charged, the second new chunk
  // would be throttled.
  REQUIRE(central.Start({"--rate", "1", "--burst", std::to_string(2 * kTwoRows.size())}));
  auto cli = MakeClient(central);

  auto first = Post(cli, kTwoRows, "p1:0-16");
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(central.received_rows() == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"});

  SUBCASE("a repeated key is 200 duplicate, not stored and not charged") {
    for (int i = 0; i < 3; ++i) {
      auto dup = Post(cli, kTwoRows, "p1:0-16");
      REQUIRE(dup);
      CHECK(dup->status == 200);
      CHECK(json::parse(dup->body) == json{{"status", "duplicate"}});
    }
    CHECK(central.received_rows().size() == 2);
    auto second = Post(cli, kTwoRows, "p1:16-32");
    REQUIRE(second);
    CHECK(second->status == 200);
    CHECK(central.received_rows().size() == 4);
    auto stats = central.Stats();
    CHECK(stats["duplicate_chunks"] == 3);
    CHECK(stats["accepted_chunks"] == 2);
    CHECK(stats["throttled"] == 0);
  }
  SUBCASE("a request without a key is not deduped") {
    REQUIRE(Post(cli, kTwoRows, "")->status == 200);
    REQUIRE(Post(cli, kTwoRows, "p1:16-32")->status == 429);  // the burst is spent
    CHECK(central.received_rows().size() == 4);
    CHECK(central.Stats()["duplicate_chunks"] == 0);
  }
  SUBCASE("a restarted receiver still dedupes from keys.log") {
    REQUIRE(central.Stop() == 0);
    REQUIRE(central.Start());
    auto again = MakeClient(central);
    auto dup = Post(again, kTwoRows, "p1:0-16");
    REQUIRE(dup);
    CHECK(dup->status == 200);
    CHECK(dup->body == R"({"status":"duplicate"})");
    CHECK(central.received_rows().size() == 2);
    auto fresh = Post(again, kTwoRows, "p1:16-32");
    REQUIRE(fresh);
    CHECK(fresh->body != R"({"status":"duplicate"})");
    CHECK(central.received_rows().size() == 4);
  }
}

TEST_CASE("central throttles wire bytes with a token bucket and Retry-After") {
  CentralProcess central(CentralProcess::ScratchDir("central_throttle"));
  // 40 bytes of burst at 20 bytes/s: a 10-byte shortfall is 0.5 s, announced as 1 s.
  REQUIRE(central.Start({"--rate", "20", "--burst", "40"}));
  auto cli = MakeClient(central);

  REQUIRE(Post(cli, RowsOfSize(40), "k1")->status == 200);
  auto throttled = Post(cli, RowsOfSize(10), "k2");
  REQUIRE(throttled);
  CHECK(throttled->status == 429);
  CHECK(throttled->get_header_value("Retry-After") == "1");
  CHECK(json::parse(throttled->body) ==
        json::parse(R"({"error":"rate limited","details":{"reason":"byte_rate"}})"));
  CHECK(central.received_rows().size() == 1);
  CHECK(central.Stats()["throttled"] == 1);

  // The twin: after the announced wait the same chunk is admitted.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto admitted = Post(cli, RowsOfSize(10), "k2");
  REQUIRE(admitted);
  CHECK(admitted->status == 200);
  CHECK(central.received_rows().size() == 2);
}

TEST_CASE("central admits a chunk bigger than the burst, then makes up for it") {
  CentralProcess central(CentralProcess::ScratchDir("central_throttle_big"));
  REQUIRE(central.Start({"--rate", "20", "--burst", "40"}));
  auto cli = MakeClient(central);
  auto big = Post(cli, RowsOfSize(100), "k1");
  REQUIRE(big);
  CHECK(big->status == 200);  // a full bucket admits it and goes 60 bytes negative
  auto next = Post(cli, RowsOfSize(10), "k2");
  REQUIRE(next);
  CHECK(next->status == 429);
  CHECK(next->get_header_value("Retry-After") == "4");  // (60 + 10) bytes at 20 bytes/s
}

TEST_CASE("central requires a bearer token when configured") {
  SUBCASE("fixed token") {
    CentralProcess central(CentralProcess::ScratchDir("central_token"));
    REQUIRE(central.Start({"--token", "s3cret"}));
    auto cli = MakeClient(central);
    auto missing = Post(cli, kTwoRows, "k");
    REQUIRE(missing);
    CHECK(missing->status == 401);
    CHECK(Reason(missing) == "missing_token");
    auto bad = Post(cli, kTwoRows, "k", {{"Authorization", "Bearer nope"}});
    REQUIRE(bad);
    CHECK(bad->status == 401);
    CHECK(Reason(bad) == "bad_token");
    CHECK(central.received_rows().empty());
    auto good = Post(cli, kTwoRows, "k", {{"Authorization", "Bearer s3cret"}});
    REQUIRE(good);
    CHECK(good->status == 200);
    CHECK(central.Stats()["unauthorized"] == 2);
  }
  SUBCASE("token file with a ttl: expires, then a refreshed token gets through") {
    const auto dir = CentralProcess::ScratchDir("central_token_file");
    const auto token_file = dir / "token";
    std::ofstream(token_file) << "t1\n";
    CentralProcess central(dir);
    REQUIRE(central.Start({"--token-file", token_file.string(), "--token-ttl", "1"}));
    auto cli = MakeClient(central);
    CHECK(Post(cli, kTwoRows, "k1", {{"Authorization", "Bearer t1"}})->status == 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    auto expired = Post(cli, kTwoRows, "k2", {{"Authorization", "Bearer t1"}});
    REQUIRE(expired);
    CHECK(expired->status == 401);
    CHECK(Reason(expired) == "token_expired");
    std::ofstream(token_file, std::ios::trunc) << "t2\n";
    CHECK(Post(cli, kTwoRows, "k2", {{"Authorization", "Bearer t2"}})->status == 200);
    auto old = Post(cli, kTwoRows, "k3", {{"Authorization", "Bearer t1"}});
    CHECK(Reason(old) == "token_expired");
    CHECK(central.received_rows().size() == 4);
  }
}

TEST_CASE("central refuses bodies past --max-body, on the wire and decoded") {
  constexpr std::size_t kMaxBody = 1000;
  CentralProcess central(CentralProcess::ScratchDir("central_max_body"));
  REQUIRE(central.Start({"--max-body", std::to_string(kMaxBody)}));
  auto cli = MakeClient(central);
  const httplib::Headers zstd = {{"Content-Encoding", "zstd"}};

  SUBCASE("by Content-Length") {
    auto res = Post(cli, RowsOfSize(2 * kMaxBody), "big");
    REQUIRE(res);
    CHECK(res->status == 413);
    CHECK(json::parse(res->body) ==
          json::parse(R"({"error":"payload too large","details":{"reason":"max_body"}})"));
    // The connection stays usable and the twin below the limit passes.
    CHECK(Post(cli, RowsOfSize(kMaxBody), "fits")->status == 200);
  }
  SUBCASE("by zstd inflation of a small body") {
    std::string zeros;
    for (int i = 0; i < 100000; ++i) zeros += "{}\n";
    const std::string bomb = Zstd(zeros);
    REQUIRE(bomb.size() < kMaxBody);
    auto res = Post(cli, bomb, "bomb", zstd);
    REQUIRE(res);
    CHECK(res->status == 413);
    CHECK(Reason(res) == "max_body");
    CHECK(central.Stats()["decoded_bytes"] == 0);
    auto fits = Post(cli, Zstd(RowsOfSize(kMaxBody)), "fits", zstd);
    REQUIRE(fits);
    CHECK(fits->status == 200);
    CHECK(central.Stats()["decoded_bytes"] == kMaxBody);
  }
  CHECK(central.Stats()["too_large"] == 1);
}

TEST_CASE("central validates encodings and rows and stores nothing from a bad chunk") {
  CentralProcess central(CentralProcess::ScratchDir("central_validation"));
  REQUIRE(central.Start());
  auto cli = MakeClient(central);

  SUBCASE("a row that is not a JSON object names its line") {
    // Two documents on one line, trailing garbage, a trailing comma, invalid UTF-8 in a
    // string, a bare control character: each is one bad row, not a valid one.
    for (const std::string bad : {"[1]", "42", "{\"a\":", "", "\"s\"", "{}{}", "{\"a\":1} x",
                                  "{\"a\":1,}", "{\"a\":\"\xff\"}", "{\"a\":\"\x01\"}"}) {
      CAPTURE(bad);
      auto res = Post(cli, "{\"ok\":1}\n{\"ok\":2}\n" + bad + "\n{\"ok\":3}\n", "k");
      REQUIRE(res);
      CHECK(res->status == 400);
      CHECK(json::parse(res->body) ==
            json::parse(R"({"error":"malformed row","details":{"reason":"bad_row","line":3}})"));
    }
    CHECK(central.received_rows().empty());
    // The twin: surrounding blanks, UTF-8 and escapes are fine, and the rows are stored
    // exactly as sent (the check's padding is not).
    CHECK(Post(cli, "{\"ok\":1}\n  {\"ok\":2}  \n{\"s\":\"caf\xc3\xa9 \\u00e9\\n\"}\n", "k")
              ->status == 200);
    CHECK(central.received_rows() ==
          std::vector<std::string>{"{\"ok\":1}", "  {\"ok\":2}  ",
                                   "{\"s\":\"caf\xc3\xa9 \\u00e9\\n\"}"});
  }
  SUBCASE("a final line without a newline") {
    auto res = Post(cli, "{\"a\":1}\n{\"a\":2}", "k");
    CHECK(res->status == 400);
    CHECK(Reason(res) == "unterminated_line");
  }
  SUBCASE("an empty body is accepted with no rows") {
    auto res = Post(cli, "", "k");
    CHECK(res->status == 200);
    CHECK(json::parse(res->body)["rows"] == 0);
  }
  SUBCASE("corrupt or truncated zstd") {
    const std::string z = Zstd(kTwoRows);
    auto corrupt = Post(cli, "not zstd at all", "k", {{"Content-Encoding", "zstd"}});
    CHECK(corrupt->status == 400);
    CHECK(Reason(corrupt) == "bad_encoding");
    auto truncated = Post(cli, z.substr(0, z.size() - 3), "k", {{"Content-Encoding", "zstd"}});
    CHECK(truncated->status == 400);
    CHECK(Reason(truncated) == "bad_encoding");
    CHECK(Post(cli, z, "k", {{"Content-Encoding", "zstd"}})->status == 200);
  }
  SUBCASE("zstd that inflates to an exact multiple of the decode buffer is accepted") {
    // The decoder's 64 KiB buffer filled exactly by the frame's last bytes: the frame is
    // complete, and a further call must not be read as the start of a truncated one.
    for (const std::size_t size : {std::size_t{65536}, std::size_t{1048576}}) {
      CAPTURE(size);
      auto res = Post(cli, Zstd(RowsOfSize(size)), "exact" + std::to_string(size),
                      {{"Content-Encoding", "zstd"}});
      REQUIRE(res);
      CHECK(res->status == 200);
    }
    // The twin: one byte short of a whole frame is still a truncated body.
    const std::string z = Zstd(RowsOfSize(65536));
    auto cut = Post(cli, z.substr(0, z.size() - 1), "cut", {{"Content-Encoding", "zstd"}});
    CHECK(cut->status == 400);
    CHECK(Reason(cut) == "bad_encoding");
  }
  SUBCASE("unsupported encoding or content type is 415") {
    CHECK(Post(cli, kTwoRows, "k", {{"Content-Encoding", "snappy"}})->status == 415);
    CHECK(cli.Post("/ingest", kTwoRows, "application/json")->status == 415);
    CHECK(Post(cli, kTwoRows, "k", {{"Content-Encoding", "identity"}})->status == 200);
  }
  auto stats = central.Stats();
  CHECK(stats["accepted_chunks"].get<int>() <= 2);
}

TEST_CASE("central injects failures on request") {
  const json kInjected = json::parse(R"({"error":"injected","details":{"reason":"injected"}})");

  SUBCASE("--fail-first fails the first N POSTs with 503 and Retry-After 1") {
    CentralProcess central(CentralProcess::ScratchDir("central_fail_first"));
    REQUIRE(central.Start({"--fail-first", "2"}));
    auto cli = MakeClient(central);
    for (int i = 0; i < 2; ++i) {
      auto res = Post(cli, kTwoRows, "k");
      REQUIRE(res);
      CHECK(res->status == 503);
      CHECK(res->get_header_value("Retry-After") == "1");
      CHECK(json::parse(res->body) == kInjected);
    }
    CHECK(central.received_rows().empty());
    CHECK(Post(cli, kTwoRows, "k")->status == 200);
    CHECK(central.Stats()["injected"] == 2);
  }
  SUBCASE("--fail-every N fails POSTs N, 2N with the chosen status and reason") {
    CentralProcess central(CentralProcess::ScratchDir("central_fail_every"));
    REQUIRE(central.Start(
        {"--fail-every", "3", "--fail-status", "429", "--fail-reason", "concurrency"}));
    auto cli = MakeClient(central);
    std::vector<int> statuses;
    for (int i = 1; i <= 6; ++i) {
      auto res = Post(cli, kTwoRows, "k" + std::to_string(i));
      REQUIRE(res);
      statuses.push_back(res->status);
      if (res->status == 429) CHECK(Reason(res) == "concurrency");
    }
    CHECK(statuses == std::vector<int>{200, 200, 429, 200, 200, 429});
  }
  SUBCASE("--retry-after RAW is sent verbatim") {
    CentralProcess central(CentralProcess::ScratchDir("central_retry_after_raw"));
    REQUIRE(
        central.Start({"--fail-first", "1", "--fail-status", "429", "--retry-after", "garbage"}));
    auto cli = MakeClient(central);
    CHECK(Post(cli, kTwoRows, "k")->get_header_value("Retry-After") == "garbage");
  }
  SUBCASE("--no-retry-after omits the header") {
    CentralProcess central(CentralProcess::ScratchDir("central_no_retry_after"));
    REQUIRE(central.Start({"--fail-first", "1", "--no-retry-after"}));
    auto cli = MakeClient(central);
    auto res = Post(cli, kTwoRows, "k");
    CHECK(res->status == 503);
    CHECK_FALSE(res->has_header("Retry-After"));
  }
  SUBCASE("--error-body-bytes pads the error body, which stays valid JSON") {
    constexpr std::size_t kPadded = 100000;
    CentralProcess central(CentralProcess::ScratchDir("central_error_padding"));
    REQUIRE(central.Start({"--fail-first", "1", "--error-body-bytes", std::to_string(kPadded)}));
    auto cli = MakeClient(central);
    auto res = Post(cli, kTwoRows, "k");
    REQUIRE(res);
    CHECK(res->body.size() == kPadded);
    CHECK(Reason(res) == "injected");
    auto ok = Post(cli, kTwoRows, "k");  // the twin: success bodies are not padded
    CHECK(ok->body.size() < 100);
  }
  SUBCASE("a non-backpressure status carries no Retry-After") {
    CentralProcess central(CentralProcess::ScratchDir("central_fail_500"));
    REQUIRE(central.Start({"--fail-first", "1", "--fail-status", "500"}));
    auto cli = MakeClient(central);
    auto res = Post(cli, kTwoRows, "k");
    CHECK(res->status == 500);
    CHECK_FALSE(res->has_header("Retry-After"));
  }
}

TEST_CASE("central reports stats and logs every POST with its body hash") {
  CentralProcess central(CentralProcess::ScratchDir("central_stats"));
  REQUIRE(central.Start({"--fail-first", "1"}));
  auto cli = MakeClient(central);
  CHECK(Post(cli, kTwoRows, "p:0-16")->status == 503);
  CHECK(Post(cli, kTwoRows, "p:0-16")->status == 200);
  CHECK(cli.Get("/healthz")->body == "ok");

  auto stats = central.Stats();
  for (const char* field :
       {"requests", "accepted_chunks", "duplicate_chunks", "accepted_rows", "throttled", "injected",
        "unauthorized", "too_large", "bad_request", "bytes", "decoded_bytes"}) {
    CAPTURE(field);
    CHECK(stats.contains(field));
  }
  CHECK(stats["requests"] == 2);
  CHECK(stats["accepted_rows"] == 2);
  CHECK(stats["bytes"] == kTwoRows.size());

  auto log = central.request_log();
  REQUIRE(log.size() == 2);
  CHECK(log[0]["status"] == 503);
  CHECK(log[1]["status"] == 200);
  CHECK(log[0]["key"] == "p:0-16");
  CHECK(log[0]["body_bytes"] == kTwoRows.size());
  CHECK(log[0]["encoding"] == "identity");
  CHECK(log[0]["body_fnv1a"] == log[1]["body_fnv1a"]);
  CHECK(log[0]["body_fnv1a"].get<std::string>().size() == 16);
  CHECK(log[0]["t_ms"] <= log[1]["t_ms"]);
}

TEST_CASE("central exits promptly on SIGTERM even with a header delay pending") {
  CentralProcess central(CentralProcess::ScratchDir("central_shutdown"));
  REQUIRE(central.Start({"--header-delay-ms", "30000"}));
  std::thread sender([port = central.port()] {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(std::chrono::seconds(10));
    (void)cli.Post("/ingest", kTwoRows, kNdjson);
  });
  // Bounded wait until the POST is inside the delay (GET /stats is never delayed).
  for (int i = 0; i < 400 && central.Stats()["requests"] != 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(central.Stats()["requests"] == 1);
  const auto begin = std::chrono::steady_clock::now();
  CHECK(central.Stop() == 0);
  CHECK(std::chrono::steady_clock::now() - begin < std::chrono::seconds(1));
  sender.join();
  CHECK(central.received_rows().empty());
}

TEST_CASE("central refuses bad command lines with exit 64 naming the option") {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--bogus"},
                                               {"--rate", "abc"},
                                               {"--burst", "10"},
                                               {"--fail-status", "503"},
                                               {"--max-body"}}) {
    CAPTURE(args[0]);
    CentralProcess central(CentralProcess::ScratchDir("central_bad_flag"));
    CHECK_FALSE(central.Start(args));
    CHECK(central.exit_code() == kExitUsage);
    CHECK(central.stderr_text().find(args[0]) != std::string::npos);
  }
  // The twin: a good flag set starts.
  CentralProcess central(CentralProcess::ScratchDir("central_good_flag"));
  CHECK(central.Start({"--rate", "10"}));
}

// Connections that come at once while the receiver is busy wait in its listen backlog.
// cpp-httplib's default backlog is 5: the rest of a window's connects lost their SYN and
// came a second later (RTO), which a benchmark sees as a second of idle link.
// Stopped, the receiver accepts nothing, so exactly the backlog's connections complete.
// @ref LLP 0011#backlog
TEST_CASE("central's listen backlog holds a burst of 64 connects") {
  CentralProcess central(CentralProcess::ScratchDir("it_central_backlog"));
  REQUIRE(central.Start());
  REQUIRE(::kill(central.pid(), SIGSTOP) == 0);
  constexpr int kConnects = 64;
  std::vector<int> fds;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(central.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < kConnects; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    REQUIRE(fd >= 0);
    fds.push_back(fd);
    (void)::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  }
  // A handshake on 127.0.0.1 takes microseconds; a dropped SYN is re-sent after 1 s.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int connected = 0;
  for (const int fd : fds) {
    pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (::poll(&p, 1, 0) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
        err == 0) {
      ++connected;
    }
  }
  REQUIRE(::kill(central.pid(), SIGCONT) == 0);
  for (const int fd : fds) ::close(fd);
  CHECK(connected == kConnects);
}
