// SPDX-License-Identifier: Apache-2.0
// Pooled connections on real sockets (LLP 0014#threads): a connection idle for the
// keep-alive is closed, with the thread that posts on it; one within it is kept and
// reused by the next call.
#include <doctest/doctest.h>

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "fwdsink/forward_sink.h"
#include "support/it_support.h"
#include "support/test_files.h"
#include "support/threads.h"

using namespace std::chrono_literals;
using fwdsink::test::SinkRun;
using fwdsink::test::WaitFor;
using fwdsink::test::WriteRows;

namespace {

// A server that accepts every body, on its own threads.
class OkServer {
 public:
  OkServer() {
    server_.Post(".*", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
    server_.set_keep_alive_timeout(3600);  // only the client closes here
    server_.set_keep_alive_max_count(1000);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~OkServer() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/ingest"; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

// Established TCP connections to 127.0.0.1:`port` from a client (their remote port is
// the server's), from /proc/net/tcp: the client sockets of this process, since nothing
// else here connects to that port.
int EstablishedTo(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // the header
  int n = 0;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string slot, local, remote, state;
    row >> slot >> local >> remote >> state;
    const auto colon = remote.find(':');
    if (state == "01" && colon != std::string::npos &&
        std::stoi(remote.substr(colon + 1), nullptr, 16) == port) {
      ++n;
    }
  }
  return n;
}

fwdsink::ForwardOptions Options(const OkServer& server, std::chrono::milliseconds keep_alive) {
  fwdsink::ForwardOptions o;
  o.url = server.url();
  o.pacing.enabled = false;
  o.window = 1;  // one connection: the count below is exact
  o.transport.keep_alive = keep_alive;
  return o;
}

}  // namespace

TEST_CASE("AConnectionIdleForTheKeepAliveIsClosedWithItsThread") {
  const auto dir = fwdsink::test::FreshDir("keep_alive", "closed");
  WriteRows(dir / "p.ndjson", 100);
  OkServer kept_server;
  OkServer closed_server;
  // Twin first: a keep-alive of an hour keeps its connection past the other's close.
  SinkRun kept(Options(kept_server, 1h));
  REQUIRE(kept.Forward("p", dir / "p.ndjson").outcome == fwdsink::Outcome::kDelivered);
  CHECK(EstablishedTo(kept_server.port()) == 1);  // kept between calls

  const std::size_t before = fwdsink::test::SettledThreadCount();
  SinkRun closed(Options(closed_server, 300ms));
  REQUIRE(closed.Forward("p", dir / "p.ndjson").outcome == fwdsink::Outcome::kDelivered);
  CHECK(EstablishedTo(closed_server.port()) == 1);
  CHECK(fwdsink::test::ThreadCount() >= before + 1);  // the connection's thread
  CHECK(WaitFor([&] { return EstablishedTo(closed_server.port()) == 0; }, 10s, 20ms));
  CHECK(fwdsink::test::ThreadsSettleAt(before));  // its thread ended with it
  CHECK(EstablishedTo(kept_server.port()) == 1);

  SUBCASE("the next call opens a connection again, and it too is closed when idle") {
    REQUIRE(closed.Forward("p", dir / "p.ndjson", 0).outcome == fwdsink::Outcome::kDelivered);
    CHECK(EstablishedTo(closed_server.port()) == 1);
    CHECK(WaitFor([&] { return EstablishedTo(closed_server.port()) == 0; }, 10s, 20ms));
  }
}
