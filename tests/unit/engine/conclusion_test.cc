// SPDX-License-Identifier: Apache-2.0
// The conclusion table: for each ending, what it writes into the result, the counters
// it adds and the events it emits with their fields. Literal values throughout.
#include "engine/conclusion.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using fwdsink::Conclude;
using fwdsink::Counters;
using fwdsink::Ending;
using fwdsink::EndingFor;
using fwdsink::Event;
using fwdsink::Facts;
using fwdsink::ForwardResult;
using fwdsink::Outcome;
using fwdsink::RespoolReason;

namespace {

struct Concluded {
  ForwardResult result;
  Counters counters;
  std::vector<Event> events;
};

// Concludes `ending` from a result whose cursor is at 4096.
void Run(Concluded& c, Ending ending, const Facts& facts) {
  c.result.resume_offset = 4096;
  Conclude(ending, facts, c.result, c.counters, [&](Event e) { c.events.push_back(e); });
}

Facts ChunkFacts() {
  return {.key = "p:4096-8192",
          .status = 429,
          .reason = "byte_rate",
          .message = "a sentence",
          .attempt = 3,
          .wait = std::chrono::milliseconds{120000},
          .begin = 4096,
          .end = 8192,
          .rows = 7,
          .respool = RespoolReason::kBudgetExhausted};
}

}  // namespace

TEST_CASE("Conclusion: a give-up respools with two events and two counters") {
  Concluded c;
  Run(c, Ending::kGiveUp, ChunkFacts());
  CHECK(c.result.outcome == Outcome::kRespooled);
  CHECK(c.result.respool_reason == RespoolReason::kBudgetExhausted);
  CHECK(c.result.status == 429);
  CHECK(c.result.reason == "byte_rate");
  CHECK(c.result.message == "a sentence");
  CHECK(c.counters.budget_exhausted.load() == 1);
  CHECK(c.counters.respools.load() == 1);
  CHECK(c.counters.aborts.load() == 0);
  REQUIRE(c.events.size() == 2);
  CHECK(c.events[0].name == "forward.give_up");
  CHECK(c.events[0].key == "p:4096-8192");
  CHECK(c.events[0].attempt == 3);
  CHECK(c.events[0].wait == std::chrono::milliseconds{120000});
  CHECK(c.events[0].begin == 4096);
  CHECK(c.events[0].end == 8192);
  CHECK(c.events[1].name == "forward.respool");
  CHECK(c.events[1].reason == "budget_exhausted");  // the respool reason, not the server's
  CHECK(c.events[1].end == 4096);                   // the cursor, not the chunk's end
  CHECK(c.events[1].begin == 0);
  CHECK(c.events[1].attempt == 0);
}

TEST_CASE("Conclusion: a cursor not saved names no key and no status") {
  Concluded c;
  Run(c, Ending::kCursorNotSaved,
      {.message = "the cursor could not be persisted after offset 4096"});
  CHECK(c.result.outcome == Outcome::kRespooled);
  CHECK(c.result.respool_reason == RespoolReason::kCursorNotSaved);
  CHECK(c.counters.respools.load() == 1);
  CHECK(c.counters.budget_exhausted.load() == 0);
  REQUIRE(c.events.size() == 1);
  CHECK(c.events[0].name == "forward.respool");
  CHECK(c.events[0].reason == "cursor_not_saved");
  CHECK(c.events[0].key.empty());
  CHECK(c.events[0].status == 0);
  CHECK(c.events[0].end == 4096);
}

TEST_CASE("Conclusion: the table, one ending a row") {
  struct Expect {
    Ending ending;
    Outcome outcome;
    std::vector<std::string> events;
    std::string message;  // the result's
  };
  const std::vector<Expect> rows = {
      {Ending::kDelivered, Outcome::kDelivered, {"forward.delivered"}, ""},
      {Ending::kShrunk, Outcome::kPartitionError, {"forward.error"}, "a sentence"},
      {Ending::kUnreadable, Outcome::kPartitionError, {"forward.error"}, "a sentence"},
      {Ending::kEncodeFailed, Outcome::kPartitionError, {"forward.error"}, "a sentence"},
      {Ending::kAborted, Outcome::kAborted, {"forward.aborted"}, "closed"},
      {Ending::kPoisoned, Outcome::kPoisoned, {"forward.poison"}, "a sentence"},
      {Ending::kClientError, Outcome::kRespooled, {"forward.respool"}, "a sentence"},
      {Ending::kRequestRefused,
       Outcome::kRespooled,
       {"forward.request_refused", "forward.respool"},
       "a sentence"},
      {Ending::kTlsError, Outcome::kTlsError, {"forward.tls_error"}, "a sentence"},
      {Ending::kAuthFailed, Outcome::kAuthError, {"forward.auth_failed"}, "a sentence"},
      {Ending::kConfigError, Outcome::kConfigError, {"forward.config_error"}, "a sentence"},
  };
  for (const Expect& e : rows) {
    CAPTURE(static_cast<int>(e.ending));
    Concluded c;
    Run(c, e.ending, ChunkFacts());
    CHECK(c.result.outcome == e.outcome);
    CHECK(c.result.message == e.message);
    std::vector<std::string> names;
    for (const Event& ev : c.events) names.emplace_back(ev.name);
    CHECK(names == e.events);
  }
}

TEST_CASE("Conclusion: what each row takes from the facts") {
  SUBCASE("a poison records its range and rows") {
    Concluded c;
    Run(c, Ending::kPoisoned, ChunkFacts());
    CHECK(c.result.poison_begin == 4096);
    CHECK(c.result.poison_end == 8192);
    CHECK(c.result.poison_rows == 7);
    CHECK(c.counters.poisoned_chunks.load() == 1);
  }
  SUBCASE("a client error keeps the status Count() set, and takes the server's words") {
    Concluded c;
    c.result.status = 404;
    Facts f = ChunkFacts();
    f.server_message = "no such table";
    f.respool = RespoolReason::kClientError;
    Run(c, Ending::kClientError, f);
    CHECK(c.result.status == 404);
    CHECK(c.result.server_message == "no such table");
    CHECK(c.result.respool_reason == RespoolReason::kClientError);
    REQUIRE(c.events.size() == 1);
    CHECK(c.events[0].reason == "byte_rate");  // the server's reason, not the respool's
  }
  SUBCASE("a request refused is respooled as such, counted twice") {
    Concluded c;
    Run(c, Ending::kRequestRefused, ChunkFacts());
    CHECK(c.result.respool_reason == RespoolReason::kRequestRefused);
    CHECK(c.counters.request_refusals.load() == 1);
    CHECK(c.counters.respools.load() == 1);
    REQUIRE(c.events.size() == 2);
    CHECK(c.events[1].reason == "request_refused");
  }
  SUBCASE("a split changes no outcome: the call goes on") {
    Concluded c;
    c.result.outcome = Outcome::kDelivered;
    Run(c, Ending::kSplit, ChunkFacts());
    CHECK(c.result.outcome == Outcome::kDelivered);
    CHECK(c.result.message.empty());
    CHECK(c.counters.splits.load() == 1);
    REQUIRE(c.events.size() == 1);
    CHECK(c.events[0].name == "forward.split");
    CHECK(c.events[0].end == 8192);
  }
  SUBCASE("an abort's event has its own sentence and the cursor") {
    Concluded c;
    Run(c, Ending::kAborted, ChunkFacts());
    CHECK(c.counters.aborts.load() == 1);
    REQUIRE(c.events.size() == 1);
    CHECK(c.events[0].message == "close() aborted the partition; cursor kept");
    CHECK(c.events[0].end == 4096);
    CHECK(c.events[0].key.empty());
  }
}

TEST_CASE("Conclusion: the ending of each verdict") {
  using fwdsink::Action;
  using fwdsink::StopCause;
  using fwdsink::Verdict;
  CHECK_FALSE(EndingFor(Verdict{.action = Action::kAcknowledge}).has_value());
  CHECK_FALSE(EndingFor(Verdict{.action = Action::kRetryInPlace}).has_value());
  CHECK_FALSE(EndingFor(Verdict{.action = Action::kRefreshToken}).has_value());
  CHECK(EndingFor(Verdict{.action = Action::kSplit}) == Ending::kSplit);
  CHECK(EndingFor(Verdict{.action = Action::kPoison}) == Ending::kPoisoned);
  CHECK(EndingFor(Verdict{.action = Action::kRespool,
                          .respool_reason = RespoolReason::kRequestRefused}) ==
        Ending::kRequestRefused);
  CHECK(EndingFor(Verdict{.action = Action::kRespool,
                          .respool_reason = RespoolReason::kClientError}) == Ending::kClientError);
  CHECK(EndingFor(Verdict{.action = Action::kStop, .stop = StopCause::kTls}) == Ending::kTlsError);
  CHECK(EndingFor(Verdict{.action = Action::kStop, .stop = StopCause::kAuth}) ==
        Ending::kAuthFailed);
  CHECK(EndingFor(Verdict{.action = Action::kStop, .stop = StopCause::kConfig}) ==
        Ending::kConfigError);
  CHECK(EndingFor(Verdict{.action = Action::kStop, .stop = StopCause::kAborted}) ==
        Ending::kAborted);
}
