// SPDX-License-Identifier: Apache-2.0
// Private to the engine: one request's life. The gate, the pacer, the post, the verdict
// and the backoff, as explicit states. An Attempt never sleeps and never posts: each
// step *returns* what it wants next (post now, or be woken at a time), and the one loop
// that runs attempts (ForwardSink's) does the sleeping and the I/O. Several Attempts may
// be alive at once (each owns its state; what they share is in SendCore, whose parts
// are thread-safe or the sender's). @ref LLP 0014#attempt
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>

#include "engine/auth.h"
#include "engine/pacing_report.h"
#include "engine/request.h"
#include "engine/verdict.h"
#include "fwdsink/backoff.h"
#include "fwdsink/clock.h"
#include "fwdsink/endpoints.h"
#include "fwdsink/forward_options.h"
#include "fwdsink/forward_result.h"

namespace fwdsink {

// Where a call's requests go: the endpoint of the current attempt, kept from chunk to
// chunk, and what the endpoints had said when last asked.
struct Route {
  std::size_t ep = 0;
  std::uint64_t moves_seen = 0;  // Endpoints' waking moves at our last look
  bool probe = false;            // the current attempt probes the primary, not yet reported
};

// One call's bisection: which refused chunk it started from, whether the server took
// any part of it, and how many requests it spent. @ref LLP 0023#request-level-refusals
struct Bisection {
  bool active = false;    // a bisection is under way
  std::uint64_t end = 0;  // the end of the refused chunk it started from
  bool acked = false;     // the server accepted some part of it
  std::uint64_t requests = 0;

  // A request for the chunk starting at `begin`; the bisection is over past its end.
  void NoteRequest(std::uint64_t begin) {
    if (active && begin >= end) *this = Bisection{.requests = requests};
    if (active) ++requests;
  }
  // A chunk ending at `chunk_end` is split: starts a bisection unless one runs.
  void NoteSplit(std::uint64_t chunk_end) {
    if (active) return;
    *this = Bisection{.active = true, .end = chunk_end, .acked = false, .requests = requests + 1};
  }
  void NoteAcked(std::uint64_t chunk_end) {
    if (active && chunk_end <= end) acked = true;
  }
};

// What every attempt of one sink's call shares.
struct SendCore {
  const ForwardOptions& options;
  Endpoints& endpoints;
  SinkCredentials& credentials;
  Counters& counters;
  TimeSource& time;
  const UniformRandom& random;
  std::stop_token stop;
  std::string_view content_encoding;
  std::function<void(Event)> emit;             // adds label, partition, endpoint
  std::function<void(SenderState)> set_state;  // the progress line's
  const AttemptObserver& observer;             // may be empty
  PacingReport& pacing;
  Route& route;
  Bisection& bisection;
};

class Attempt {
 public:
  struct Step {
    enum class Kind {
      kPost,  // post the request now: headers(), limits(), to endpoint()
      kWait,  // be woken at wake_at (Woke() says how the wait ended)
      kDone,  // end() says how the attempts ended
    } kind = Kind::kDone;
    MonotonicTime wake_at{};
    // The wait is on the endpoint: a failover that leaves it ends the wait early (the
    // gate and the backoff; the pacer's wait is not). @ref LLP 0019#wake
    bool on_endpoint = false;
  };
  enum class Woken { kElapsed, kLeft, kStopped };

  struct End {
    enum class Kind {
      kVerdict,   // `verdict` ends the chunk's attempts (never a retry or a refresh)
      kGiveUp,    // the next wait (`would_wait`, for `verdict`) would pass the budget
      kAborted,   // Close()
      kBadToken,  // the token cannot go in a header (`message`); nothing was sent
    } kind = Kind::kAborted;
    Verdict verdict{};
    std::chrono::milliseconds would_wait{0};
    std::string message{};
    // An acknowledgement whose chunk was larger on the wire than the advertised burst:
    // the raw size later chunks are cut to. @ref LLP 0016#shrink
    std::optional<std::size_t> shrink_to{};
  };

  Attempt(SendCore& core, const Request& request);
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;

  [[nodiscard]] Step Start();
  [[nodiscard]] Step Woke(Woken how);
  // Right before a kPost step goes out (the loop may have held it for a free
  // connection): an answer that came since may have held the endpoint or replaced the
  // pacer's schedule, and then the attempt passes the gate and the pacer again. Returns
  // kPost (go now) or the step to take instead. @ref LLP 0016#recheck
  [[nodiscard]] Step Recheck();
  // The answer to the post of the last kPost step, and how long it took.
  [[nodiscard]] Step Answered(TransportResult result, std::chrono::microseconds round_trip);

  [[nodiscard]] const HeaderList& headers() const { return headers_; }
  // The request may take what is left of the inline budget, no more. @ref LLP 0023#deadlines
  [[nodiscard]] PostLimits limits() const;
  // The endpoint this attempt posts to, and its view of the endpoints (its own: several
  // attempts may be alive at once; each hands its view back to SendCore::route, where the
  // next attempt starts from). @ref LLP 0014#window
  [[nodiscard]] std::size_t endpoint() const { return route_.ep; }
  [[nodiscard]] const Route& route() const { return route_; }
  [[nodiscard]] const Request& request() const { return request_; }
  [[nodiscard]] const End& end() const { return end_; }
  // Failed attempts that waited (not token refreshes).
  [[nodiscard]] std::size_t attempts() const { return attempt_; }
  // The HTTP status of the last answer that had one; whether a refusal was seen.
  [[nodiscard]] std::optional<int> status_seen() const { return status_seen_; }
  [[nodiscard]] bool throttled() const { return throttled_; }

 private:
  enum class Next { kChoose, kGate, kPace, kPost };

  Step Run();
  Step Done(End end);
  Step Wait(std::chrono::milliseconds wait, bool on_endpoint);
  Step GiveUp(const Verdict& v, std::chrono::milliseconds would_wait);
  bool UseEndpoint();
  bool TokenSafe();
  std::optional<Step> Gate();
  std::optional<Step> Pace();
  Step Post();
  Step Retry(const Verdict& v);
  WaitDecision DecideRetryWait(const Verdict& v);
  bool ExpectationFailed();
  void NoteExpect();
  [[nodiscard]] bool AllowExpect() const;
  void EmitRetry(const Verdict& v, const WaitDecision& d);
  [[nodiscard]] std::int64_t NowMs() const;
  bool RefreshToken(const Verdict& v);
  HealthDecision ReportHealth(HealthReport::Kind kind, std::chrono::milliseconds wait,
                              const Verdict& v);
  void Count(const Verdict& v);
  void Observe(const Verdict& v, std::chrono::microseconds round_trip);
  Answer Describe() const;
  std::optional<std::size_t> ShrinkLimit() const;
  void SetWaiting(const std::string& reason, int status, std::chrono::milliseconds wait);
  void Emit(Event e) const;
  void PushBack(std::atomic<std::uint64_t>& counter);
  [[nodiscard]] std::chrono::milliseconds Elapsed() const;
  [[nodiscard]] bool Stale() const;
  EndpointEntry& Entry() const { return core_.endpoints.at(route_.ep); }
  EndpointLink& Link() const { return core_.credentials.links[route_.ep]; }

  SendCore& core_;
  const Request& request_;
  const MonotonicTime first_;  // the first attempt: the inline budget counts from here
  Route route_;                // this attempt's; handed back to core_.route on each change
  Next next_ = Next::kChoose;
  HeaderList headers_;  // built by UseEndpoint: first attempt, and on every move
  std::size_t attempt_ = 0;
  bool refreshed_ = false;    // a 401 made us refresh the token already (per endpoint)
  bool pushed_back_ = false;  // waited or refused so far (for the observer)
  bool counted_ = false;      // the request about to go out is counted (until answered)
  std::optional<std::uint64_t> paced_epoch_;  // the pacer's, when this send reserved
  std::optional<int> status_seen_;
  bool throttled_ = false;
  // Breaks of the connection under this chunk in a row (reconnect rungs used), and
  // whether the last transport error was one. @ref LLP 0014#reconnect
  std::size_t reconnects_ = 0;
  bool broke_ = false;
  std::chrono::milliseconds last_round_trip_{0};  // of the last post
  TransportResult last_;                          // the last answer; Describe() views into it
  End end_;
};

}  // namespace fwdsink
