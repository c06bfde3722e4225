// SPDX-License-Identifier: Apache-2.0
// The window of chunks per partition on real sockets (LLP 0014#window): several chunks
// of one partition in flight at once, acknowledgements in any order with the cursor at
// the contiguous prefix, --window 1 in order, a refusal that stops the window from
// growing, and Close() with a full window. The server below decides per request by its
// key; each test waits for the phase it needs (requests held, answers given) and bounds
// only the abort.
#include <doctest/doctest.h>

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fwdsink/forward_sink.h"
#include "support/it_support.h"
#include "support/test_files.h"

using namespace std::chrono_literals;

namespace {

// A server that records each request's key on arrival and on answer, counts the
// requests in its handlers at once, and answers as `decide` says (it may block until
// `Release()` or the server stops).
class WindowServer {
 public:
  struct Answer {
    int status = 200;
    std::string retry_after{};
    httplib::Headers headers{};
  };
  using Decide = std::function<Answer(const std::string& key, WindowServer& self)>;

  explicit WindowServer(Decide decide) : decide_(std::move(decide)) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(64); };
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string key = req.get_header_value("Idempotency-Key");
      {
        std::lock_guard lock(mu_);
        arrived_.push_back(key);
        arrived_at_.push_back(std::chrono::steady_clock::now());
        log_.push_back("arrive " + key);
        ++active_;
        max_active_ = std::max(max_active_, active_);
      }
      cv_.notify_all();
      const Answer a = decide_(key, *this);
      {
        std::lock_guard lock(mu_);
        --active_;
        answered_.push_back(key + "=" + std::to_string(a.status));
        log_.push_back("answer " + key + "=" + std::to_string(a.status));
      }
      cv_.notify_all();
      res.status = a.status;
      if (!a.retry_after.empty()) res.set_header("Retry-After", a.retry_after);
      for (const auto& [name, value] : a.headers) res.set_header(name, value);
      res.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~WindowServer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/ingest"; }

  // In a handler: waits until `ready` holds (under the lock) or the server stops.
  void WaitUntil(const std::function<bool()>& ready) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 3s, [&] { return stopping_ || ready(); });
  }
  // In a handler: polls `ready` (the sink's side: its acks, its counters) for 3 s at most.
  static void Poll(const std::function<bool()>& ready) {
    for (int i = 0; i < 3000 && !ready(); ++i) std::this_thread::sleep_for(1ms);
  }
  // From the test: waits (bounded) until `ready` holds.
  bool Await(const std::function<bool()>& ready, std::chrono::milliseconds bound = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, bound, [&] { return ready(); });
  }
  // Lets every held handler answer.
  void Release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }

  // Under the lock (inside WaitUntil/Await predicates) or after the run.
  std::vector<std::string> arrived_;
  std::vector<std::chrono::steady_clock::time_point> arrived_at_;  // one per arrived_
  std::vector<std::string> answered_;
  std::vector<std::string> log_;  // "arrive <key>" and "answer <key>=<status>", in order
  int active_ = 0;
  int max_active_ = 0;
  bool released_ = false;

 private:
  Decide decide_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

// A partition of `rows` rows of 32 bytes each: two rows a 64-byte chunk.
std::filesystem::path Partition(std::string_view tag, int rows) {
  const auto dir = fwdsink::test::FreshDir("integration_window", tag);
  std::string text;
  for (int i = 0; i < rows; ++i)
    text += "{\"row\":" + std::to_string(1000 + i) + ",\"pad\":\"xxxxxxxxxx\"}\n";  // 32 bytes
  REQUIRE(fwdsink::test::WriteFile(dir / "p.ndjson", text));
  return dir / "p.ndjson";
}

fwdsink::ForwardOptions Options(const WindowServer& server, std::size_t window) {
  fwdsink::ForwardOptions o;
  o.url = server.url();
  o.compression = fwdsink::Compression::kIdentity;
  o.chunker.chunk_bytes = 64;  // two rows a chunk
  o.window = window;
  o.backpressure.jitter = 0;
  return o;
}

std::unique_ptr<fwdsink::ForwardSink> Sink(const fwdsink::ForwardOptions& o) {
  auto made = fwdsink::ForwardSink::Create(o, {});
  REQUIRE_MESSAGE(made.ok(), made.status().ToString());
  return std::move(made).value();
}

bool IsFirstChunk(const std::string& key) { return key.ends_with(":0-64"); }

}  // namespace

TEST_CASE("AWindowPutsSeveralChunksOfOnePartitionInFlightAtOnce") {
  // Each request is held until 4 are in the server at once (or 10 s pass): only a
  // window lets that happen.
  WindowServer server([](const std::string&, WindowServer& self) {
    self.WaitUntil([&] { return self.max_active_ >= 4; });
    return WindowServer::Answer{};
  });
  const auto path = Partition("four", 16);  // 8 chunks
  auto sink = Sink(Options(server, 4));
  const auto r =
      sink->ForwardPartition("p", path, 0, [](const fwdsink::AckedChunk&) { return true; });
  CHECK(r.outcome == fwdsink::Outcome::kDelivered);
  CHECK(r.chunks_acked == 8);
  CHECK(server.max_active_ == 4);  // never more than the window
}

TEST_CASE("WindowOneKeepsOneRequestInFlightAndTheRowsInOrder") {
  WindowServer server([](const std::string&, WindowServer&) { return WindowServer::Answer{}; });
  const auto path = Partition("one", 16);
  auto sink = Sink(Options(server, 1));
  const auto r =
      sink->ForwardPartition("p", path, 0, [](const fwdsink::AckedChunk&) { return true; });
  CHECK(r.outcome == fwdsink::Outcome::kDelivered);
  CHECK(server.max_active_ == 1);
  std::vector<std::string> in_order;
  for (std::uint64_t b = 0; b < 8 * 64; b += 64) {
    in_order.push_back("p:" + std::to_string(b) + "-" + std::to_string(b + 64));
  }
  CHECK(server.arrived_ == in_order);
}

TEST_CASE("AcksInAnyOrderMoveTheCursorToTheContiguousPrefixOnly") {
  // The first chunk is answered only after the sink took the three behind it: their
  // acks come first, and the cursor the driver would save stays at 0 until the gap
  // closes.
  std::atomic<int> acked{0};
  WindowServer server([&](const std::string& key, WindowServer&) {
    if (IsFirstChunk(key)) WindowServer::Poll([&] { return acked.load() >= 3; });
    return WindowServer::Answer{};
  });
  const auto path = Partition("gap", 8);  // 4 chunks
  auto sink = Sink(Options(server, 4));
  std::vector<std::pair<std::uint64_t, std::uint64_t>> acks;  // (chunk end, cursor)
  const auto r = sink->ForwardPartition("p", path, 0, [&](const fwdsink::AckedChunk& a) {
    acks.emplace_back(a.end, a.cursor);
    acked.fetch_add(1);
    return true;
  });
  CHECK(r.outcome == fwdsink::Outcome::kDelivered);
  REQUIRE(acks.size() == 4);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(acks[i].first != 64);  // the first chunk's ack comes last
    CHECK(acks[i].second == 0);  // a gap holds the cursor
  }
  CHECK(acks[3] == std::pair<std::uint64_t, std::uint64_t>{64, 4 * 64});
  CHECK(r.resume_offset == 4 * 64);
}

TEST_CASE("ARefusalWithAWindowInFlightOpensNoNewRangeUntilTheRefusedChunkIsAcked") {
  // The first chunk is refused once (Retry-After: 1) when the window is in the server;
  // the other three are answered once the sink took the refusal. Between the refusal
  // and the first chunk's re-send, the chunks in flight finish, but no new range of the
  // partition arrives.
  std::atomic<int> first_seen{0};
  std::unique_ptr<fwdsink::ForwardSink> sink;
  WindowServer server([&](const std::string& key, WindowServer& self) {
    if (IsFirstChunk(key) && first_seen.fetch_add(1) == 0) {
      self.WaitUntil([&] { return self.arrived_.size() >= 4; });
      return WindowServer::Answer{.status = 429, .retry_after = "1"};
    }
    if (!IsFirstChunk(key)) {
      WindowServer::Poll([&] { return sink->counters().status_429.load() >= 1; });
    }
    return WindowServer::Answer{};
  });
  const auto path = Partition("refusal", 24);  // 12 chunks
  sink = Sink(Options(server, 4));
  const auto r =
      sink->ForwardPartition("p", path, 0, [](const fwdsink::AckedChunk&) { return true; });
  CHECK(r.outcome == fwdsink::Outcome::kDelivered);
  CHECK(r.chunks_acked == 12);
  const auto& log = server.log_;
  const auto refused = std::find(log.begin(), log.end(), "answer p:0-64=429");
  const auto resent = std::find(std::next(std::find(log.begin(), log.end(), "arrive p:0-64")),
                                log.end(), "arrive p:0-64");
  REQUIRE(refused != log.end());
  REQUIRE(resent != log.end());
  REQUIRE(refused < resent);
  std::vector<std::string> new_between;
  for (auto it = std::next(refused); it != resent; ++it) {
    if (it->starts_with("arrive ") && std::find(log.begin(), refused, *it) == refused) {
      new_between.push_back(*it);
    }
  }
  CHECK(new_between.empty());
  // The twin: after the re-send, the window opens again (more than one chunk at once).
  CHECK(std::count_if(resent, log.end(),
                      [](const std::string& e) { return e.starts_with("arrive "); }) > 1);
}

TEST_CASE("CloseWithAFullWindowInFlightReturnsPromptlyWithTheCursorAtTheAckedPrefix") {
  // The first two chunks are answered, the next four held until the server stops: the
  // phase is four requests held in the server's handlers.
  WindowServer server([](const std::string& key, WindowServer& self) {
    if (key == "p:0-64" || key == "p:64-128") return WindowServer::Answer{};
    self.WaitUntil([&] { return self.released_; });
    return WindowServer::Answer{};
  });
  const auto path = Partition("close", 32);
  auto sink = Sink(Options(server, 4));
  fwdsink::ForwardResult r;
  std::uint64_t last_cursor = 0;
  std::thread sender([&] {
    r = sink->ForwardPartition("p", path, 0, [&](const fwdsink::AckedChunk& a) {
      last_cursor = a.cursor;
      return true;
    });
  });
  CHECK(server.Await([&] { return server.active_ == 4 && server.answered_.size() == 2; }));
  const auto t0 = std::chrono::steady_clock::now();
  sink->Close();
  sender.join();
  const auto took = std::chrono::steady_clock::now() - t0;
  server.Release();
  CHECK(r.outcome == fwdsink::Outcome::kAborted);
  CHECK(r.resume_offset == 128);
  CHECK(last_cursor == 128);
  // DESIGN.md's bound is 100 ms; a loaded CI machine gets 10x (the figure is in the
  // close benchmark).
  CHECK(took < 1000ms);
}

// Requests of a window asleep on their pace when a newer answer says `Remaining: 0`
// reserve again and wait for the reset (issue 38 item 6, LLP 0016#recheck): no request
// arrives in the 5 s after it. The twin: an answer that leaves room lets them go on.
TEST_CASE("RequestsPacedBeforeANewerRemainingZeroWaitForTheReset") {
  for (const bool none_left : {true, false}) {
    CAPTURE(none_left);
    using Clock = std::chrono::steady_clock;
    std::mutex mu;
    std::optional<Clock::time_point> told;  // when the fourth answer went
    std::atomic<int> seen{0};
    const auto quota = [](const char* limit, const char* remaining, const char* reset) {
      return httplib::Headers{{"X-RateLimit-Limit", limit},
                              {"X-RateLimit-Remaining", remaining},
                              {"X-RateLimit-Reset", reset}};
    };
    WindowServer server([&](const std::string&, WindowServer&) {
      WindowServer::Answer a;
      if (seen.fetch_add(1) == 3) {
        // Held while the first answers (one a second, none left now) make the sink
        // reserve slots a second apart for its next chunks; then the count the test is
        // about.
        std::this_thread::sleep_for(300ms);
        const std::lock_guard lock(mu);
        told = Clock::now();
        a.headers = none_left ? quota("2", "0", "5") : quota("2", "2", "1");
        return a;
      }
      const std::lock_guard lock(mu);
      if (!told) {
        a.headers = quota("1", "0", "1");
      } else if (Clock::now() - *told > 5s || !none_left) {
        a.headers = quota("10", "10", "1");  // the window reset: room again
      } else {
        a.headers = quota("2", "0", "5");
      }
      return a;
    });
    const auto path = Partition(none_left ? "remaining_zero" : "remaining_room", 12);  // 6
    auto sink = Sink(Options(server, 4));
    const auto r =
        sink->ForwardPartition("p", path, 0, [](const fwdsink::AckedChunk&) { return true; });
    CHECK(r.outcome == fwdsink::Outcome::kDelivered);
    REQUIRE(told.has_value());
    int within = 0, after = 0;  // arrived in the 5 s after the count (less 200 ms), later
    for (const Clock::time_point at : server.arrived_at_) {
      within += at > *told && at < *told + 4800ms;
      after += at > *told;
    }
    CHECK(after > 0);  // chunks were left to send after the count: it could matter
    if (none_left) {
      CHECK(within == 0);
    } else {
      CHECK(within > 0);
    }
  }
}
