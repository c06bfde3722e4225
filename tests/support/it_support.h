// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the forward sink's end-to-end tests (tests/integration/): a sink
// on the real clock that records its events and acks, partition writers, and checks on
// the receiver's request log.
//
// Threading: a SinkRun is driven by one test thread; Close() may come from any thread,
// and the event/ack records are guarded by a mutex so a watching thread may read them
// while the sender runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "fwdsink/forward_sink.h"

namespace fwdsink::test {

// Longest any polling loop in these tests waits for a condition before failing.
inline constexpr auto kPollTimeout = std::chrono::seconds(10);
inline constexpr auto kPollStep = std::chrono::milliseconds(2);

// An Event with owned strings: fwdsink::Event holds views into the sink.
struct RecordedEvent {
  std::string name;
  std::string partition;
  std::string key;
  int status = 0;
  std::string reason;
  std::size_t attempt = 0;
  std::chrono::milliseconds wait{0};
  std::string wait_source;
  std::string retry_after;
  std::string phase;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::string message;
};

// Writes the given lines, each followed by '\n', as a producer seals a partition: into a
// hidden sibling (which a spool scan skips), then renamed over `path`, so a daemon that
// polls the directory never sees a file half written (a daemon polling every 0.2 s once
// took an empty partition and the rows went into the unlinked file).
inline void WriteLines(const std::filesystem::path& path, const std::vector<std::string>& lines) {
  const std::filesystem::path temp = path.parent_path() / ("." + path.filename().string() + ".w");
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    for (const auto& l : lines) out << l << '\n';
    out.flush();
    REQUIRE(out.good());
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  REQUIRE_FALSE(ec);
}

// Writes `rows` rows `{"i":N,"pad":"x..."}` padded so that every line (with its '\n') is
// exactly `line_bytes` long, and returns the lines without their newlines.
inline std::vector<std::string> WriteRows(const std::filesystem::path& path, int rows,
                                          std::size_t line_bytes = 50) {
  std::vector<std::string> lines;
  for (int i = 0; i < rows; ++i) {
    std::string line = "{\"i\":" + std::to_string(i) + ",\"pad\":\"";
    const std::size_t fixed = line.size() + 2 + 1;  // closing "} and '\n'
    REQUIRE(line_bytes > fixed);
    line.append(line_bytes - fixed, 'x');
    line += "\"}";
    lines.push_back(std::move(line));
  }
  WriteLines(path, lines);
  return lines;
}

// Returns the byte offset where line `index` (0-based) starts in the file of `lines`.
inline std::uint64_t LineOffset(const std::vector<std::string>& lines, std::size_t index) {
  std::uint64_t off = 0;
  for (std::size_t i = 0; i < index; ++i) off += lines[i].size() + 1;
  return off;
}

// Returns the multiset of rows, for "every row exactly once" comparisons.
inline std::map<std::string, int> Counted(const std::vector<std::string>& rows) {
  std::map<std::string, int> m;
  for (const auto& r : rows) ++m[r];
  return m;
}

// Checks that every request the receiver logged for one key carried the identical wire
// body (size and FNV-1a), and returns how many distinct keys were re-sent at least once.
inline int CheckResendsIdentical(const std::vector<nlohmann::json>& log) {
  std::map<std::string, std::pair<std::uint64_t, std::string>> first;
  std::map<std::string, int> seen;
  for (const auto& entry : log) {
    REQUIRE(entry.is_object());
    const auto key = entry.value("key", std::string());
    REQUIRE_FALSE(key.empty());  // the sink always sends a key
    const auto bytes = entry.value("body_bytes", std::uint64_t{0});
    const auto hash = entry.value("body_fnv1a", std::string());
    auto [it, inserted] = first.try_emplace(key, bytes, hash);
    if (!inserted) {
      CAPTURE(key);
      CHECK(it->second.first == bytes);
      CHECK(it->second.second == hash);
    }
    ++seen[key];
  }
  int resent = 0;
  for (const auto& [key, n] : seen) resent += n > 1 ? 1 : 0;
  return resent;
}

// Returns the log entries' statuses, in order.
inline std::vector<int> Statuses(const std::vector<nlohmann::json>& log) {
  std::vector<int> out;
  for (const auto& e : log) out.push_back(e.value("status", 0));
  return out;
}

// A ForwardSink on the real clock against one URL, recording events and acks.
class SinkRun {
 public:
  // Creates the sink; fails the test (REQUIRE) when the options are refused.
  explicit SinkRun(fwdsink::ForwardOptions options, fwdsink::TokenProvider tokens = {}) {
    fwdsink::ForwardDeps deps;
    deps.tokens = std::move(tokens);
    deps.on_event = [this](const fwdsink::Event& e) {
      std::lock_guard lock(mu_);
      events_.push_back({.name = std::string(e.name),
                         .partition = e.partition,
                         .key = e.key,
                         .status = e.status,
                         .reason = e.reason,
                         .attempt = e.attempt,
                         .wait = e.wait,
                         .wait_source = std::string(e.wait_source),
                         .retry_after = e.retry_after,
                         .phase = std::string(e.phase),
                         .begin = e.begin,
                         .end = e.end,
                         .message = e.message});
    };
    auto created = fwdsink::ForwardSink::Create(std::move(options), std::move(deps));
    REQUIRE_MESSAGE(created.ok(), created.status().ToString());
    sink_ = std::move(created).value();
  }

  // Forwards `path` as partition `partition` from `begin`, recording every ack.
  fwdsink::ForwardResult Forward(std::string_view partition, const std::filesystem::path& path,
                                 std::uint64_t begin = 0) {
    return sink_->ForwardPartition(partition, path, begin, [this](const fwdsink::AckedChunk& a) {
      std::lock_guard lock(mu_);
      acks_.push_back({.partition = {},
                       .begin = a.begin,
                       .end = a.end,
                       .rows = a.rows,
                       .duplicate = a.duplicate});
      return true;
    });
  }

  fwdsink::ForwardSink& sink() { return *sink_; }

  // Returns the recorded events called `name` ("forward.backpressure", ...).
  std::vector<RecordedEvent> Named(std::string_view name) const {
    std::lock_guard lock(mu_);
    std::vector<RecordedEvent> out;
    for (const auto& e : events_) {
      if (e.name == name) out.push_back(e);
    }
    return out;
  }

  // Returns the acks so far (partition left empty).
  std::vector<fwdsink::AckedChunk> acks() const {
    std::lock_guard lock(mu_);
    return acks_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<RecordedEvent> events_;      // guarded by mu_
  std::vector<fwdsink::AckedChunk> acks_;  // guarded by mu_
  std::unique_ptr<fwdsink::ForwardSink> sink_;
};

// Polls `done` every `step` (kPollStep: a condition that costs a file read wants more)
// until it returns true or `timeout` passes; returns whether it became true.
template <typename Pred>
bool WaitFor(Pred done, std::chrono::milliseconds timeout = kPollTimeout,
             std::chrono::milliseconds step = kPollStep) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(step);
  }
  return done();
}

// Runs `f` when the scope ends, before the futures declared earlier wait for their
// threads: a failed REQUIRE then ends the test instead of hanging it.
struct AtExit {
  std::function<void()> f;
  ~AtExit() { f(); }
};

}  // namespace fwdsink::test
