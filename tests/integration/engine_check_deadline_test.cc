// SPDX-License-Identifier: Apache-2.0
// The ClickHouse dedup-window check never holds `--once` (issue 38 item 4, LLP
// 0017#dedup-window): against a server whose system.tables answer drips a byte a
// second, or never comes, the daemon exits within a moment of its last delivered row;
// the twin: against a server that answers the check at once it exits as promptly.
#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "support/central_process.h"
#include "support/daemon_process.h"
#include "support/it_support.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fwdsink::test::CentralProcess;
using fwdsink::test::DaemonProcess;

enum class CheckAnswer { kDrip, kHang, kAtOnce };

// Takes inserts (200) and answers the check's query as told.
class FakeClickHouse {
 public:
  explicit FakeClickHouse(CheckAnswer how) : how_(how) {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.body.find("system.tables") == std::string::npos) {
        std::lock_guard lock(mu_);
        last_insert_ = Clock::now();
        ++inserts_;
        res.set_content("", "text/plain");
        return;
      }
      if (how_ == CheckAnswer::kAtOnce) {
        res.set_content("", "text/tab-separated-values");
        return;
      }
      res.set_chunked_content_provider("text/tab-separated-values",
                                       [this](std::size_t, httplib::DataSink& sink) {
                                         for (int i = 0; i < 100 && !stop_; ++i) {
                                           if (how_ == CheckAnswer::kDrip && !sink.write("1", 1))
                                             return false;
                                           std::this_thread::sleep_for(1s);
                                         }
                                         sink.done();
                                         return true;
                                       });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~FakeClickHouse() {
    stop_ = true;
    server_.stop();
    thread_.join();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/?query=INSERT+INTO+t+FORMAT+JSONEachRow";
  }
  Clock::time_point last_insert() const {
    std::lock_guard lock(mu_);
    return last_insert_;
  }
  int inserts() const {
    std::lock_guard lock(mu_);
    return inserts_;
  }

 private:
  const CheckAnswer how_;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  int port_ = 0;
  mutable std::mutex mu_;
  Clock::time_point last_insert_{};  // guarded by mu_
  int inserts_ = 0;                  // guarded by mu_
};

void ExitsPromptly(CheckAnswer how, const std::string& name) {
  const auto dir = CentralProcess::ScratchDir("engine_check_deadline_" + name);
  std::filesystem::create_directories(dir / "spool" / "ready");
  fwdsink::test::WriteRows(dir / "spool" / "ready" / "p.ndjson", 1000, 100);
  FakeClickHouse server(how);
  DaemonProcess daemon(dir, "once",
                       {"forward", "--once", "--spool", (dir / "spool").string(), "--url",
                        server.url(), "--profile", "clickhouse", "--compression", "gzip"});
  REQUIRE(daemon.started());
  REQUIRE(daemon.Wait(60s) == std::optional<int>(0));
  const auto exited = Clock::now();
  REQUIRE(server.inserts() >= 1);
  const auto after =
      std::chrono::duration_cast<std::chrono::milliseconds>(exited - server.last_insert());
  MESSAGE(name << ": exit " << after.count() << " ms after the last insert");
  // The bound is 1 s; the check allows for a loaded machine, and is red at 47 s.
  CHECK(after < 3s);
}

}  // namespace

TEST_CASE("EngineCheck: a dripping system.tables answer does not hold --once") {
  ExitsPromptly(CheckAnswer::kDrip, "drip");
}
TEST_CASE("EngineCheck: a hanging system.tables answer does not hold --once") {
  ExitsPromptly(CheckAnswer::kHang, "hang");
}
TEST_CASE("EngineCheck: a check answered at once, the twin") {
  ExitsPromptly(CheckAnswer::kAtOnce, "at_once");
}
