// SPDX-License-Identifier: Apache-2.0
#include "engine/attempt.h"
#include "base/counter_add.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/counter_add.h"
#include "fwdsink/check.h"
#include "saturating.h"

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

// What a verdict retried in place says about the endpoint: transport errors and 5xx
// are failures (a 503 too, unless it asks for a wait); the rest is backpressure, a
// reason to leave only when its wait is long. @ref LLP 0019#leave
HealthReport::Kind HealthKindFor(const Verdict& v) {
  switch (v.retry_cause) {
    case RetryCause::kTransport: return HealthReport::Kind::kFailed;
    case RetryCause::kServer:
      return v.status >= 500 ? HealthReport::Kind::kFailed : HealthReport::Kind::kHeld;
    case RetryCause::kBackpressure:
      return v.status == 503 && !v.retry_after ? HealthReport::Kind::kFailed
                                               : HealthReport::Kind::kHeld;
  }
  return HealthReport::Kind::kFailed;
}

// A refused connect this soon after the endpoint's last answer is taken for a restart
// of what is in front of it (the reconnect rungs), not an outage (the ladder).
// @ref LLP 0014#reconnect
constexpr milliseconds kRecentlyUp{5000};

}  // namespace

std::int64_t Attempt::NowMs() const {
  // +1: a clock whose epoch is now still says "answered", not "never" (0).
  return std::chrono::duration_cast<milliseconds>(core_.time.MonotonicNow().time_since_epoch())
             .count() +
         1;
}

Attempt::Attempt(SendCore& core, const Request& request)
    : core_(core), request_(request), first_(core.time.MonotonicNow()), route_(core.route) {}

Attempt::Step Attempt::Start() {
  next_ = Next::kChoose;
  return Run();
}

Attempt::Step Attempt::Woke(Woken how) {
  if (how == Woken::kStopped) return Done({.kind = End::Kind::kAborted});
  if (how == Woken::kLeft) next_ = Next::kChoose;  // re-send where requests now go
  return Run();
}

// Runs the states until one needs the loop: a post, a wait, or the end.
Attempt::Step Attempt::Run() {
  for (;;) {
    switch (next_) {
      case Next::kChoose:
        if (core_.stop.stop_requested()) return Done({.kind = End::Kind::kAborted});
        if (!UseEndpoint()) return Step{};
        next_ = Next::kGate;
        break;
      case Next::kGate:
        if (std::optional<Step> s = Gate()) return *s;
        break;
      case Next::kPace:
        if (std::optional<Step> s = Pace()) return *s;
        break;
      case Next::kPost:
        if (Stale()) {
          next_ = Next::kGate;  // the endpoint changed its mind since the reservation
          break;
        }
        return Post();
    }
  }
}

Attempt::Step Attempt::Recheck() {
  FWDSINK_DCHECK(next_ == Next::kPost);
  return Run();
}

// Whether an answer since this send passed the gate and the pacer holds the endpoint
// now (a Retry-After) or moved the pacer's schedule later (a newer `remaining: 0`).
// @ref LLP 0016#recheck
bool Attempt::Stale() const {
  if (Entry().gate->Remaining(core_.time.MonotonicNow()).remaining > milliseconds::zero()) {
    return true;
  }
  return paced_epoch_ && *paced_epoch_ != Entry().pacer->schedule_epoch();
}

Attempt::Step Attempt::Done(End end) {
  end_ = std::move(end);
  return Step{.kind = Step::Kind::kDone};
}

Attempt::Step Attempt::Wait(milliseconds wait, bool on_endpoint) {
  return Step{.kind = Step::Kind::kWait,
              .wake_at = core_.time.MonotonicNow() + wait,
              .on_endpoint = on_endpoint};
}

Attempt::Step Attempt::GiveUp(const Verdict& v, milliseconds would_wait) {
  return Done({.kind = End::Kind::kGiveUp, .verdict = v, .would_wait = would_wait});
}

milliseconds Attempt::Elapsed() const {
  return std::chrono::duration_cast<milliseconds>(core_.time.MonotonicNow() - first_);
}

PostLimits Attempt::limits() const {
  return PostLimits{.time_left = core_.options.backpressure.inline_budget - Elapsed(),
                    .allow_expect = AllowExpect()};
}

// Picks the endpoint of the next attempt: the one in use, or the primary when a probe
// is due. On the chunk's first attempt and on every change of endpoint, hands that
// endpoint's token over (checked once) and builds the headers. @ref LLP 0019#states
bool Attempt::UseEndpoint() {
  Route& route = route_;
  // Starts from what the last attempt saw (another may have moved meanwhile).
  const std::size_t was = route.ep;
  route.moves_seen = core_.route.moves_seen;
  const EndpointHealth::Choice choice =
      core_.endpoints.Choose(core_.time.MonotonicNow(), &route.moves_seen);
  const bool changed = headers_.empty() || choice.endpoint != was;
  if (choice.endpoint != was) refreshed_ = false;  // a 401 is per endpoint
  route.ep = choice.endpoint;
  route.probe = choice.probe;
  core_.route = route;
  core_.counters.endpoint_in_use.store(route.ep, std::memory_order_relaxed);
  if (route.probe) {
    Add(core_.counters.probes);
    Add(Entry().counters.probes);
  }
  if (!changed) return true;
  // A token is checked once, when it is handed over (here or after a refresh).
  if (Entry().tokens && !Link().token) {
    Link().token = Entry().tokens(std::exchange(Link().token_reload, false));
    if (!TokenSafe()) return false;
  }
  headers_ = RequestHeaders(request_, core_.options, core_.content_encoding,
                            core_.credentials.headers, Link());
  return true;
}

// A token with CR, LF, NUL or another control byte would inject headers: it is a
// configuration error, and nothing is sent with it. @ref LLP 0023#header-safety
bool Attempt::TokenSafe() {
  const Status bad = CheckToken(Link());
  if (bad.ok()) return true;
  Done({.kind = End::Kind::kBadToken, .message = bad.message() + "; nothing sent"});
  return false;
}

// One backoff per resource: honours a hold another sender's Retry-After set. A hold
// longer than failover_after leaves the endpoint when another is not known down.
std::optional<Attempt::Step> Attempt::Gate() {
  const ForwardOptions& o = core_.options;
  auto hold = Entry().gate->Remaining(core_.time.MonotonicNow());
  next_ = Next::kPace;
  if (hold.remaining <= milliseconds::zero()) return std::nullopt;
  if (core_.endpoints.size() > 1 && hold.remaining > o.failover.failover_after) {
    const Verdict held{.action = Action::kRetryInPlace, .reason = hold.reason};
    if (ReportHealth(HealthReport::Kind::kHeld, hold.remaining, held).resend_now) {
      next_ = Next::kChoose;
      return std::nullopt;
    }
  }
  // Senders held together are let go apart; a hold is only lengthened.
  // @ref LLP 0016#jitter
  hold.remaining = JitterLonger(hold.remaining, o.backpressure.jitter, core_.random);
  if (SaturatingAdd(Elapsed(), hold.remaining) > o.backpressure.inline_budget) {
    return GiveUp({.action = Action::kRetryInPlace,
                   .reason = hold.reason,
                   .retry_cause = RetryCause::kBackpressure},
                  hold.remaining);
  }
  PushBack(core_.counters.gate_waits);
  Emit({.name = events::kForwardGateWait,
        .key = request_.key,
        .reason = hold.reason,
        .attempt = attempt_,
        .wait = hold.remaining,
        .wait_source = "gate",
        .begin = request_.range.begin,
        .end = request_.range.end,
        .message = "endpoint held by an earlier Retry-After"});
  SetWaiting(hold.reason, 0, hold.remaining);
  return Wait(hold.remaining, /*on_endpoint=*/true);
}

// Proactive pacing: waits for the endpoint pacer's slot, after any gate hold (so it
// never shortens one). @ref LLP 0016#pacer
std::optional<Attempt::Step> Attempt::Pace() {
  const MonotonicTime now = core_.time.MonotonicNow();
  paced_epoch_ = Entry().pacer->schedule_epoch();  // before: a change in between rechecks
  const milliseconds wait = Entry().pacer->Reserve(now, request_.wire->size());
  next_ = Next::kPost;
  if (wait <= milliseconds::zero()) return std::nullopt;
  const std::string source(to_string(Entry().pacer->Current(now).source));
  if (SaturatingAdd(Elapsed(), wait) > core_.options.backpressure.inline_budget) {
    return GiveUp({.action = Action::kRetryInPlace,
                   .reason = "pacing_" + source,
                   .retry_cause = RetryCause::kBackpressure},
                  wait);
  }
  PushBack(core_.counters.pacer_waits);
  Add(core_.counters.pacer_wait_ms, static_cast<std::uint64_t>(wait.count()));
  if (wait >= std::chrono::seconds{1}) {
    Emit({.name = events::kForwardPaceWait,
          .key = request_.key,
          .reason = source,
          .attempt = attempt_,
          .wait = wait,
          .wait_source = "pacer",
          .begin = request_.range.begin,
          .end = request_.range.end,
          .message = "paced to the endpoint's rate"});
    SetWaiting("pacing (" + source + ")", 0, wait);
  }
  return Wait(wait, /*on_endpoint=*/false);
}

// Counts the request about to go out.
Attempt::Step Attempt::Post() {
  core_.set_state({.phase = SenderState::Phase::kSending, .partition = request_.partition});
  if (counted_) return Step{.kind = Step::Kind::kPost};  // rechecked: counted once
  counted_ = true;
  core_.bisection.NoteRequest(request_.range.begin);
  Counters& c = core_.counters;
  Add(c.chunks_sent);
  Add(Entry().counters.chunks_sent);
  Add(c.rows_sent, request_.range.rows);
  Add(c.bytes_sent, request_.body.size());
  return Step{.kind = Step::Kind::kPost};
}

// What came back, for Classify(). The answer's views point into last_.
Answer Attempt::Describe() const {
  Answer a{.error = last_.error,
           .error_message = last_.message,
           .status = last_.response.status,
           .body_prefix = last_.response.body_prefix,
           .rows = request_.range.rows,
           .token_refresh_tried = refreshed_,
           .has_token_provider = static_cast<bool>(Entry().tokens),
           .now = core_.time.SystemNow(),
           .rate_limit = &last_.response.rate_limit};
  if (last_.response.retry_after) a.retry_after = *last_.response.retry_after;
  if (last_.response.clickhouse_exception_code) {
    a.clickhouse_exception_code = *last_.response.clickhouse_exception_code;
  }
  // The facts Classify() needs about a refused single row.
  if (a.error == TransportError::kNone && request_.range.rows == 1 &&
      (a.status == 400 || a.status == 422)) {
    a.row_is_json = nlohmann::json::accept(request_.body);
    a.split_tree_acked = core_.bisection.active && core_.bisection.acked;
  }
  return a;
}

Attempt::Step Attempt::Answered(TransportResult result, std::chrono::microseconds round_trip) {
  counted_ = false;
  last_ = std::move(result);
  last_round_trip_ = std::chrono::duration_cast<milliseconds>(round_trip);
  // Counted once the transport says whether the body went. @ref LLP 0017#expect-continue
  if (last_.body_withheld) {
    Add(core_.counters.bodies_withheld);
  } else {
    Add(core_.counters.wire_bytes_sent, request_.wire->size());
  }
  if (core_.stop.stop_requested()) return Done({.kind = End::Kind::kAborted});
  NoteExpect();
  if (ExpectationFailed()) {
    next_ = Next::kChoose;  // not a failed attempt: the same request at once, plainly
    return Run();
  }
  if (last_.error == TransportError::kNone) {
    reconnects_ = 0;
    broke_ = false;
    Entry().last_answer_ms->store(NowMs(), std::memory_order_relaxed);
  }
  Answer answer = Describe();
  Verdict verdict = Classify(answer, core_.options.responses);
  Count(verdict);
  // A refusal that comes without a wait: the next request's head may be refused too.
  // (429/503 are remembered with their wait, in Retry().) @ref LLP 0017#expect-when
  if (last_.error == TransportError::kNone &&
      (last_.response.status == 401 || last_.response.status == 413)) {
    Entry().expect->OnRefused(core_.time.MonotonicNow(), milliseconds::zero());
  }
  Observe(verdict, round_trip);
  switch (verdict.action) {
    case Action::kAcknowledge: {
      const MonotonicTime now = core_.time.MonotonicNow();
      Entry().pacer->OnAccepted(now, request_.wire->size(), verdict.quota);
      core_.pacing.Report(*Entry().pacer, now, core_.counters, core_.emit);
      End end{.kind = End::Kind::kVerdict, .shrink_to = ShrinkLimit()};
      ReportHealth(HealthReport::Kind::kAccepted, milliseconds::zero(), verdict);
      end.verdict = std::move(verdict);
      return Done(std::move(end));
    }
    case Action::kRetryInPlace: return Retry(verdict);
    case Action::kRefreshToken:
      if (RefreshToken(verdict)) {
        if (!TokenSafe()) return Step{};
        headers_ = RequestHeaders(request_, core_.options, core_.content_encoding,
                                  core_.credentials.headers, Link());
        next_ = Next::kChoose;  // not a backoff attempt: re-send at once
        return Run();
      }
      answer.token_refresh_tried = true;  // the provider had no token: an auth error
      verdict = Classify(answer, core_.options.responses);
      break;
    default: break;
  }
  return Done({.kind = End::Kind::kVerdict, .verdict = std::move(verdict)});
}

// The wait before a retry: a reconnect rung while the connection keeps breaking under
// the chunk, otherwise the Retry-After or the ladder. @ref LLP 0014#reconnect
WaitDecision Attempt::DecideRetryWait(const Verdict& v) {
  const BackpressurePolicy& policy = core_.options.backpressure;
  const milliseconds elapsed = Elapsed();
  // (An answer with a status already ended the streak in Answered().)
  if (v.retry_cause == RetryCause::kTransport) {
    // A connect that fails right after a break is the same restart seen from outside.
    // So is a refused connect soon after the endpoint last answered anyone: another
    // sender's connection, or this one's kept-alive one, was there a moment ago.
    const std::int64_t answered = Entry().last_answer_ms->load(std::memory_order_relaxed);
    const bool recently_up = answered > 0 && NowMs() - answered < kRecentlyUp.count();
    const bool broke_now =
        last_.phase != WirePhase::kConnect || last_.connection_lost || recently_up;
    broke_ = broke_ || broke_now;
    // A request that ran at least as long as the longest reconnect wait before its
    // connection broke was under way, not refused: a front that restarts again and again
    // under long uploads. It starts the streak afresh instead of walking it to the
    // ladder; a break that comes at once (a limit that resets every upload) still does.
    if (broke_now && !policy.reconnect.empty() && last_round_trip_ >= policy.reconnect.back()) {
      reconnects_ = 0;
    }
    if (broke_ && reconnects_ < policy.reconnect.size()) {
      return DecideReconnect(policy, reconnects_++, elapsed, core_.random);
    }
  }
  return DecideWait(policy, attempt_ - reconnects_, v.retry_after, elapsed, core_.random);
}

// Names the retry: a transport error with the phase it broke in, or the refusal.
void Attempt::EmitRetry(const Verdict& v, const WaitDecision& d) {
  const bool transport = v.retry_cause == RetryCause::kTransport;
  Emit({.name = transport ? events::kForwardTransportError : events::kForwardBackpressure,
        .key = request_.key,
        .status = v.status,
        .reason = v.reason,
        .attempt = attempt_,
        .wait = d.wait,
        .wait_source = to_string(d.source),
        .phase = transport ? to_string(last_.phase) : std::string_view{},
        .retry_after = v.retry_after_raw,
        .begin = request_.range.begin,
        .end = request_.range.end,
        .message = v.message});
}

// Retry in place: same body, same key, after the decided wait, unless a failover moved
// the chunk to an endpoint not known down (then at once). @ref LLP 0014#retry-in-place
Attempt::Step Attempt::Retry(const Verdict& v) {
  const ForwardOptions& o = core_.options;
  ++attempt_;
  const milliseconds elapsed = Elapsed();
  const WaitDecision d = DecideRetryWait(v);
  EmitRetry(v, d);
  const MonotonicTime now = core_.time.MonotonicNow();
  // The server's hold applies to every sender, even when this one gives up now:
  // the next partition must not hammer the endpoint. @ref LLP 0021#shared-gate
  if (d.source == WaitSource::kRetryAfter) Entry().gate->HoldUntil(now + d.wait, v.reason);
  if (v.retry_cause == RetryCause::kBackpressure) {
    Entry().expect->OnRefused(now, d.wait);  // @ref LLP 0017#expect-when
    Entry().pacer->OnRefused(now, d.wait, v.quota);
    core_.pacing.Report(*Entry().pacer, now, core_.counters, core_.emit);
  }
  next_ = Next::kChoose;
  // Left for an endpoint not known down: the same chunk goes there at once.
  // @ref LLP 0019#leave
  if (ReportHealth(HealthKindFor(v), d.wait, v).resend_now &&
      elapsed < o.backpressure.inline_budget) {
    return Run();
  }
  if (d.give_up) return GiveUp(v, d.wait);
  PushBack(core_.counters.waits);
  Add(core_.counters.wait_ms, static_cast<std::uint64_t>(d.wait.count()));
  SetWaiting(v.reason, v.status, d.wait);
  return Wait(d.wait, /*on_endpoint=*/true);
}

// Asks the provider for a fresh token, once per chunk; returns whether it gave one.
bool Attempt::RefreshToken(const Verdict& v) {
  refreshed_ = true;
  Add(core_.counters.auth_refreshes);
  Link().token = Entry().tokens(true);
  Emit({.name = events::kForwardAuthRefresh,
        .key = request_.key,
        .status = v.status,
        .reason = v.reason,
        .message = v.message});
  return Link().token.has_value();
}

// Tells the endpoints what the request came to; carries a move out (counters, an
// event). The request is no probe any more once reported.
HealthDecision Attempt::ReportHealth(HealthReport::Kind kind, milliseconds wait, const Verdict& v) {
  Route& route = route_;
  const HealthDecision d = core_.endpoints.Report(
      {.endpoint = route.ep, .kind = kind, .probe = route.probe, .wait = wait},
      core_.time.MonotonicNow(), &route.moves_seen);
  route.probe = false;
  core_.route.moves_seen = route.moves_seen;
  core_.route.probe = false;
  if (kind == HealthReport::Kind::kFailed) Add(Entry().counters.failures);
  if (kind == HealthReport::Kind::kHeld) Add(Entry().counters.holds);
  Event e{.key = request_.key, .status = v.status, .reason = v.reason};
  const std::string& to = core_.endpoints.at(d.active).name;
  switch (d.move) {
    case HealthDecision::Move::kStay: return d;
    case HealthDecision::Move::kFailover:
      Add(core_.counters.failovers);
      Add(Entry().counters.left);
      e.name = events::kForwardFailover;
      e.reason = kind == HealthReport::Kind::kFailed ? "failures" : "hold";
      e.wait = wait;
      e.message = "left " + Entry().name + " for " + to + " (" +
                  (v.reason.empty() ? std::string(e.reason) : v.reason) + ")";
      break;
    case HealthDecision::Move::kFailback:
      Add(core_.counters.failbacks);
      e.name = events::kForwardFailback;
      e.message = "the primary " + to + " answered a probe: in use again";
      break;
    case HealthDecision::Move::kProbeFailed:
      Add(core_.counters.probe_failures);
      e.name = events::kForwardProbeFailed;
      e.message = "the primary " + Entry().name + " failed a probe; " + to + " stays in use";
      break;
  }
  Emit(std::move(e));
  return d;
}

// Counts what came back, whatever is done about it next.
void Attempt::Count(const Verdict& v) {
  Counters& c = core_.counters;
  if (last_.error == TransportError::kNone) status_seen_ = v.status;
  if (v.action == Action::kStop && v.stop == StopCause::kConfig) Add(c.config_errors);
  if (v.action != Action::kRetryInPlace) return;
  switch (v.retry_cause) {
    case RetryCause::kTransport:
      PushBack(c.transport_errors);
      switch (last_.phase) {
        case WirePhase::kConnect: Add(c.transport_errors_connect); break;
        case WirePhase::kHead: Add(c.transport_errors_head); break;
        case WirePhase::kAwaitContinue: Add(c.transport_errors_await_continue); break;
        case WirePhase::kBody: Add(c.transport_errors_body); break;
        case WirePhase::kResponseHead: Add(c.transport_errors_response_head); break;
        case WirePhase::kResponseBody: Add(c.transport_errors_response_body); break;
      }
      break;
    case RetryCause::kServer: PushBack(v.status >= 500 ? c.other_5xx : c.retried_4xx); break;
    case RetryCause::kBackpressure:
      throttled_ = true;
      if (v.status != 429 && v.status != 503) {
        Add(c.engine_overload);  // an engine's code, e.g. ClickHouse 252
        break;
      }
      PushBack(v.status == 429 ? c.status_429 : c.status_503);
      break;
  }
}

// Tells the observer (the concurrency limit, the driver's round trips) what this
// answer was, where it happens. @ref LLP 0018#signals
void Attempt::Observe(const Verdict& v, std::chrono::microseconds round_trip) {
  if (!core_.observer) return;
  AttemptRecord r{.endpoint = route_.ep,
                  .status = v.status,
                  .pushed_back = pushed_back_,
                  .round_trip = round_trip};
  if (v.action == Action::kAcknowledge) {
    r.kind = AttemptRecord::Kind::kAccepted;
  } else if (v.action == Action::kRetryInPlace) {
    const bool refused = v.status == 429 || v.status == 503;
    r.kind = refused ? AttemptRecord::Kind::kRefused : AttemptRecord::Kind::kFailed;
  }
  core_.observer(r);
}

// A chunk larger on the wire than the server's advertised burst can never be paced
// into it: later chunks shrink (raw size scaled by this chunk's compression ratio),
// down to a floor. Chunks already read keep their bytes and key. @ref LLP 0016#shrink
std::optional<std::size_t> Attempt::ShrinkLimit() const {
  const std::uint64_t burst = Entry().pacer->Current(core_.time.MonotonicNow()).burst_bytes;
  const std::size_t wire = request_.wire->size();
  if (burst == 0 || wire <= burst) return std::nullopt;
  const double raw_per_wire = static_cast<double>(request_.body.size()) / static_cast<double>(wire);
  const auto limit = static_cast<std::size_t>(static_cast<double>(burst) * raw_per_wire);
  return std::max(limit, Entry().pacer->policy().min_chunk_bytes);
}

void Attempt::SetWaiting(const std::string& reason, int status, milliseconds wait) {
  core_.set_state({.phase = SenderState::Phase::kWaiting,
                   .partition = request_.partition,
                   .reason = reason,
                   .status = status,
                   .wait = wait,
                   .until = core_.time.MonotonicNow() + wait});
}

void Attempt::Emit(Event e) const {
  if (core_.emit) core_.emit(std::move(e));
}

// Counts a wait or a refusal: the observer's next sample waited.
void Attempt::PushBack(std::atomic<std::uint64_t>& counter) {
  Add(counter);
  pushed_back_ = true;
}

}  // namespace fwdsink
