// SPDX-License-Identifier: Apache-2.0
// Threads follow the work, not the partitions (LLP 0014#threads): 16 partitions through
// the driver against the reference receiver (a child process, so that every thread
// counted here is the sink's or the test's), with the peak of this process's threads
// sampled every 2 ms against the request limit plus the senders plus a few.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "fwdsink/driver.h"
#include "support/central_process.h"
#include "support/test_files.h"
#include "support/threads.h"

using namespace std::chrono_literals;
using fwdsink::test::CentralProcess;

namespace {

constexpr int kPartitions = 16;
constexpr int kRows = 400;  // ~25 KB: a dozen chunks of 2 KiB each

// The test's own threads (this one and the sampler), the deadline timer and the file
// threads (JobThreads::kFileThreads), and one to spare.
constexpr std::size_t kFew = 2 + 1 + 4 + 1;

struct Peak {
  std::size_t threads = 0;
  std::size_t limit = 0;
};

// Runs one pass over 16 partitions with `concurrency`; returns the peaks seen meanwhile.
Peak RunPass(std::string_view tag, fwdsink::ConcurrencyPolicy concurrency) {
  const auto dir = fwdsink::test::FreshDir("integration_threads", tag);
  CentralProcess central(dir / "central");
  // Each answer waits 20 ms: requests overlap, so the limit and the senders are all in use.
  REQUIRE(central.Start({"--header-delay-ms", "20", "--threads", "64"}));
  const auto spool = dir / "spool";
  std::filesystem::create_directories(spool / "ready");
  for (int p = 0; p < kPartitions; ++p) {
    std::string text;
    for (int i = 0; i < kRows; ++i) {
      text += "{\"p\":" + std::to_string(p) + ",\"i\":" + std::to_string(i) +
              ",\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n";
    }
    char name[64];
    std::snprintf(name, sizeof name, "20261205T000000.000Z-1-%08d.ndjson", p);
    REQUIRE(fwdsink::test::WriteFile(spool / "ready" / name, text));
  }
  fwdsink::DriverOptions o;
  o.spool_dir = spool;
  o.forward.url = fwdsink::test::Url(central);
  o.forward.chunker.chunk_bytes = 2048;
  o.forward.pacing.enabled = false;
  o.pack_below = 0;  // each partition its own sender
  o.concurrency = concurrency;
  auto created = fwdsink::Driver::Create(o, {});
  REQUIRE_MESSAGE(created.ok(), created.status().ToString());
  auto driver = std::move(created).value();

  std::atomic<bool> done{false};
  Peak peak;
  std::thread sampler([&] {
    while (!done.load()) {
      peak.threads = std::max(peak.threads, fwdsink::test::ThreadCount());
      peak.limit = std::max<std::size_t>(peak.limit, driver->counters().concurrency_limit.load());
      std::this_thread::sleep_for(2ms);
    }
  });
  const fwdsink::TickReport report = driver->Tick();
  done.store(true);
  sampler.join();
  CHECK(report.delivered == kPartitions);
  CHECK(central.received_rows().size() == std::size_t{kPartitions} * kRows);
  MESSAGE(tag << ": peak threads " << peak.threads << ", peak limit " << peak.limit);
  return peak;
}

}  // namespace

TEST_CASE("ThreadsStayUnderTheRequestLimitPlusTheSendersPlusAFew") {
  SUBCASE("a fixed limit of 4: four senders, four requests") {
    const Peak peak = RunPass("fixed4", {.adaptive = false, .max = 4});
    CHECK(peak.threads <= 4 + 4 + kFew);
    CHECK(peak.threads >= 4 + 2);  // twin: the senders and the test are counted
  }
  SUBCASE("the defaults (adaptive): sixteen senders, the limit as it climbs") {
    const Peak peak = RunPass("adaptive", {});
    CHECK(peak.threads <= peak.limit + kPartitions + kFew);
    CHECK(peak.threads >= kPartitions + 2);
  }
}
