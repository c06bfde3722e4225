// SPDX-License-Identifier: Apache-2.0
// Can the engine deduplicate our retries? With --profile clickhouse, reads the target
// table's deduplication window over the same endpoint and credentials and compares it
// with what fwdsink's longest retry span needs (issue 24). A re-sent chunk is dropped
// by ReplicatedMergeTree only while its block hash is still among the table's last
// `replicated_deduplication_window` blocks (and younger than `..._seconds`); a window
// smaller than the blocks the fleet writes meanwhile stores the chunk twice.
//
// Deliberately ignores: other engines (generic profile: nothing is checked), distributed
// tables (the check reads the table named in the INSERT), and the server's own
// insert_deduplicate switch. Not a failure: the result is an event and a /readyz note.
// @ref LLP 0017#dedup-window
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "fwdsink/backoff.h"
#include "fwdsink/forward_sink.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

// What a table must remember for a chunk re-sent at the end of its retry span to be
// recognised: the blocks the whole fleet writes to the table in that span, and the span.
struct DedupNeed {
  std::uint64_t blocks = 0;
  std::chrono::seconds seconds{0};
};

// Returns the window the retries need:
//   span   = inline_budget + max_wait        (the last re-send of a chunk happens within
//            its inline budget; a respooled partition's next pass, within one more wait)
//   blocks = ceil(fleet_inserts_per_s x span)  (one block per request of up to
//            max_insert_block_size rows, so one per chunk)
// e.g. the defaults (300 s + 300 s) at 10 inserts/s: 6,000 blocks and 600 s.
[[nodiscard]] DedupNeed DedupWindowNeeded(const BackpressurePolicy& policy,
                                          double fleet_inserts_per_s);

// The table's deduplication, as read from the server.
struct DedupWindow {
  bool replicated = false;    // a Replicated*MergeTree (18.16 dedupes nothing else)
  std::uint64_t blocks = 0;   // replicated_deduplication_window
  std::uint64_t seconds = 0;  // replicated_deduplication_window_seconds
};

// One answer of the server to a query: status 0 when there was none (transport error).
struct QueryAnswer {
  int status = 0;
  std::string body;
  std::string error;  // the transport's message when status is 0
};
// Runs one SQL statement over the endpoint (POST, the statement as the body).
using QueryRunner = std::function<QueryAnswer(const std::string& sql)>;

// Returns a runner that POSTs to `options.url` without its `query` parameter (the
// others, user, password, database, stay) with the same headers, Basic auth, TLS and
// proxy settings as the sink's requests, 2 s to connect and 5 s to answer. `stop`
// aborts a query in flight (and fails every later one at once), so that a daemon that
// is told to stop never waits on a server that does not answer. Any thread; one call
// at a time.
[[nodiscard]] QueryRunner ClickHouseQueryRunner(const ForwardOptions& options,
                                                std::stop_token stop = {});

// Returns the table of the INSERT in `url`'s `query` parameter ("db.t" or "t"), or
// nullopt when there is none (a URL without an INSERT ... query).
[[nodiscard]] std::optional<std::string> InsertTable(std::string_view url);

// What the check found, and what to say.
struct EngineCheckResult {
  enum class Verdict {
    kEnough,         // the window covers the need: nothing said
    kTooSmall,       // driver.engine_warning (warn) and a /readyz note
    kNotReplicated,  // driver.engine_warning (warn) and a /readyz note
    kUnreadable,     // driver.engine_unchecked (info): no rights, no table, no answer
    kNotApplicable,  // not the clickhouse profile, or no INSERT in the URL: nothing said
  };
  Verdict verdict = Verdict::kNotApplicable;
  std::optional<DedupWindow> window;
  DedupNeed need;
  Event event;       // event.name empty when nothing is to be said
  std::string note;  // for /readyz ("" when none)
};

// Reads the window of the table `options.url` inserts into (system.tables: the engine
// and the table's own SETTINGS; system.merge_tree_settings: the server's defaults)
// through `query`, and compares it with DedupWindowNeeded(options.backpressure,
// fleet_inserts_per_s). Two queries at most; a refusal or an unreadable answer is
// kUnreadable. Any thread.
[[nodiscard]] EngineCheckResult CheckDedupWindow(const ForwardOptions& options,
                                                 double fleet_inserts_per_s,
                                                 const QueryRunner& query);

// Runs a check on its own thread, once per Trigger() (triggers while one runs fold into
// one more run), so that a server that does not answer never holds up the first tick or
// the signal thread. Stop() stops the token the check was given (pass it to
// ClickHouseQueryRunner: a query in flight is aborted); the destructor lets a run in
// progress finish (bounded by the runner's timeouts; a `--once` pass that ends first
// still says what the check found), drops a trigger not yet started, and joins.
// Trigger() and Stop() from any thread.
class EngineCheckWorker {
 public:
  explicit EngineCheckWorker(std::function<void(std::stop_token)> check);
  EngineCheckWorker(const EngineCheckWorker&) = delete;
  EngineCheckWorker& operator=(const EngineCheckWorker&) = delete;
  ~EngineCheckWorker();
  // Asks for one more run.
  void Trigger();
  // Aborts the run in progress and every later one (the daemon is stopping).
  void Stop() { stop_source_.request_stop(); }

 private:
  void Loop();
  std::function<void(std::stop_token)> check_;
  std::stop_source stop_source_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;  // guarded by mu_
  bool stop_ = false;     // guarded by mu_
  std::thread thread_;
};

}  // namespace fwdsink
