// SPDX-License-Identifier: Apache-2.0
// Credentials published while a sink runs (the daemon's SIGHUP, fwdsink/credentials.h):
// taken before the next chunk, never between the re-sends of one chunk; the token is
// asked for afresh; an unsafe set is not taken. Real sockets to an in-process server,
// the fake clock doing the waiting.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "fwdsink/credentials.h"
#include "fwdsink/forward_sink.h"
#include "fwdsink/settings.h"
#include "support/fake_clock.h"
#include "support/scripted_server.h"
#include "support/test_files.h"

using namespace std::chrono_literals;

namespace {

constexpr std::string_view kSuite = "reload";
// Two rows of 8 bytes, one chunk each.
constexpr std::string_view kRows = "{\"a\":1}\n{\"a\":2}\n";

std::string Header(const fwdsink_test::Recorded& r, const std::string& name) {
  const auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

}  // namespace

TEST_CASE("published credentials apply from the next chunk, never inside a chunk's re-sends") {
  fwdsink_test::ScriptedServer server;
  const auto dir = fwdsink::test::FreshDir(kSuite, "next_chunk");
  fwdsink::test::WriteFile(dir / "p.ndjson", kRows);
  fwdsink::FakeClock clock;
  auto box = std::make_shared<fwdsink::CredentialsBox>();
  std::vector<bool> token_calls;  // force_refresh of each call
  fwdsink::RequestCredentials fresh{.headers = {{"X-Tenant", "new"}},
                                    .basic_authorization = std::nullopt};
  bool publish = true;

  fwdsink::ForwardOptions o;
  o.url = server.url();
  o.compression = fwdsink::Compression::kIdentity;
  o.chunker.chunk_bytes = 8;
  o.backpressure.jitter = 0;
  o.window = 1;  // scripted in arrival order: one chunk at a time (LLP 0014#window)
  o.headers = {{"X-Tenant", "old"}};
  fwdsink::ForwardDeps deps;
  deps.time = &clock;
  deps.sleeper = &clock;
  deps.credentials = box;
  deps.tokens = [&](bool force) -> std::optional<std::string> {
    token_calls.push_back(force);
    return token_calls.size() == 1 ? "t1" : "t2";
  };
  // The reload lands while the first chunk waits out a 503 (as a SIGHUP would).
  deps.on_event = [&](const fwdsink::Event& e) {
    if (e.name == fwdsink::events::kForwardBackpressure && publish) box->Publish(fresh);
  };
  SUBCASE("the new set") {}
  SUBCASE("an unsafe set is not taken") { fresh.headers = {{"X-Tenant", "a\r\nX-Evil: 1"}}; }
  SUBCASE("twin: nothing published") { publish = false; }
  auto sink = fwdsink::ForwardSink::Create(o, std::move(deps));
  REQUIRE(sink.ok());
  server.Then(503, {{"Retry-After", "1"}});

  const auto r = (*sink)->ForwardPartition("p", dir / "p.ndjson", 0, {});
  CHECK(r.outcome == fwdsink::Outcome::kDelivered);
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 3);  // chunk 1 refused, chunk 1 again, chunk 2
  CHECK(reqs[0].key == reqs[1].key);
  // The re-send of chunk 1 is the request that was refused, credentials included.
  CHECK(Header(reqs[0], "X-Tenant") == "old");
  CHECK(Header(reqs[1], "X-Tenant") == "old");
  CHECK(reqs[1].authorization == "Bearer t1");
  const bool taken = publish && fresh.headers[0].second == "new";
  CHECK(Header(reqs[2], "X-Tenant") == (taken ? "new" : "old"));
  if (publish) {
    // A new generation asks the token provider afresh, even when the set was unsafe.
    CHECK(token_calls == std::vector<bool>{false, true});
    CHECK(reqs[2].authorization == "Bearer t2");
  } else {
    CHECK(token_calls == std::vector<bool>{false});
    CHECK(reqs[2].authorization == "Bearer t1");
  }
}

TEST_CASE("CredentialsBox: each reader sees each generation once") {
  fwdsink::CredentialsBox box;
  std::uint64_t a = 0, b = 0;
  CHECK_FALSE(box.TakeIfNewer(a));
  box.Publish({.headers = {{"X", "1"}}, .basic_authorization = "Basic eA=="});
  const auto first = box.TakeIfNewer(a);
  REQUIRE(first);
  CHECK(first->headers == fwdsink::HeaderList{{"X", "1"}});
  CHECK_FALSE(box.TakeIfNewer(a));  // twin: nothing newer for the same reader
  CHECK(box.TakeIfNewer(b));        // another sender sees it too
  CHECK(box.generation() == 1);
}

TEST_CASE("EventLevel: the catalogue's levels") {
  using fwdsink::LogLevel;
  namespace ev = fwdsink::events;
  CHECK(fwdsink::EventLevel(ev::kForwardAuthFailed) == LogLevel::kError);
  CHECK(fwdsink::EventLevel(ev::kDriverDeadLetter) == LogLevel::kError);
  CHECK(fwdsink::EventLevel(ev::kForwardRespool) == LogLevel::kWarn);
  CHECK(fwdsink::EventLevel(ev::kForwardDelivered) == LogLevel::kInfo);
  CHECK(fwdsink::EventLevel(ev::kForwardPaceWait) == LogLevel::kDebug);
  CHECK(fwdsink::EventLevel(ev::kDaemonReloadFailed) == LogLevel::kError);
  CHECK(fwdsink::EventLevel("no.such_event") == LogLevel::kInfo);
  CHECK(fwdsink::ParseLogLevel("warn") == LogLevel::kWarn);
  CHECK_FALSE(fwdsink::ParseLogLevel("WARN"));
  CHECK(LogLevel::kDebug < LogLevel::kInfo);
  CHECK(LogLevel::kWarn < LogLevel::kError);
}
