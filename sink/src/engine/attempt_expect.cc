// SPDX-License-Identifier: Apache-2.0
// What an Attempt does about "Expect: 100-continue": whether a request asks for it, a
// 417 that turns it off, and what an answer says about an endpoint that ignores it.
// @ref LLP 0017#expect-when
#include <chrono>
#include <string>

#include "base/counter_add.h"
#include "engine/attempt.h"

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

}  // namespace

// "Expect: 100-continue" costs a round trip on every request that carries it, and pays
// only when the answer is a refusal: it goes while one is likely (the endpoint refused
// lately, its gate is closed, its pacer is at a limit), never after a 417, and not while
// the endpoint ignores it. `always` is the old rule: every body over the threshold.
// @ref LLP 0017#expect-when
bool Attempt::AllowExpect() const {
  if (Entry().expect_off->load(std::memory_order_relaxed)) return false;  // a 417
  if (core_.options.expect_continue == ExpectContinue::kAlways) return true;
  const MonotonicTime now = core_.time.MonotonicNow();
  const ExpectSignals signals{
      .gate_closed = Entry().gate->Remaining(now).remaining > milliseconds::zero(),
      .pacer_near_limit = Entry().pacer->NearLimit(now, request_.wire->size())};
  return Entry().expect->Expect(now, signals);
}

// A 417 to a request that carried "Expect: 100-continue": RFC 9110 §10.1.1 says repeat
// it without the expectation. The endpoint gets no Expect from any sender from now on
// (until a reload makes the endpoints anew). Returns whether this answer was one; a 417
// to a request without Expect is classified as any other status. @ref LLP 0017#expect-417
bool Attempt::ExpectationFailed() {
  if (last_.error != TransportError::kNone || last_.response.status != 417 || !last_.expect_sent) {
    return false;
  }
  Add(core_.counters.expect_refusals);
  const bool first = !Entry().expect_off->exchange(true);
  core_.counters.expect_off.store(1, std::memory_order_relaxed);
  if (first) {
    Emit({.name = events::kForwardExpectOff,
          .key = request_.key,
          .status = 417,
          .reason = "expectation_failed",
          .message = Entry().name +
                     " answered Expect: 100-continue with 417: the request goes again without "
                     "it, and so does every later one to this endpoint until a reload"});
  }
  return true;
}

// What the answer says about Expect at this endpoint: whether its head was answered (a
// 100 or a final status) or the wait for 100 Continue ran out. Two waits in a row that
// ran out turn Expect off for the endpoint for a while (`always` keeps the old rule:
// it waits every time). A request that failed before either says nothing.
// @ref LLP 0017#expect-when
void Attempt::NoteExpect() {
  if (!last_.expect_sent) return;
  Add(core_.counters.expect_sent);
  const bool waited_out = last_.continue_wait_expired;
  if (waited_out) Add(core_.counters.expect_timeouts);
  if (last_.error != TransportError::kNone && !waited_out) return;
  if (core_.options.expect_continue == ExpectContinue::kAlways) return;
  ExpectAdvisor& expect = *Entry().expect;
  if (!expect.OnExpectAnswered(core_.time.MonotonicNow(), waited_out)) return;
  Add(core_.counters.expect_ignored);
  const milliseconds pause = expect.policy().ignored_pause;
  Emit({.name = events::kForwardExpectIgnored,
        .key = request_.key,
        .reason = "expect_ignored",
        .wait = pause,
        .message = Entry().name + " let the wait for 100 Continue run out " +
                   std::to_string(expect.policy().ignored_in_a_row) +
                   " times in a row: no Expect to it for the next " +
                   std::to_string(std::chrono::duration_cast<std::chrono::minutes>(pause).count()) +
                   " min"});
}

}  // namespace fwdsink
