// SPDX-License-Identifier: Apache-2.0
// The forward sink's second kind of call: a pack of small partitions as one request.
// It reads every member whole and checks it against its manifest, builds the one
// Request (the pack's key, its members' keys), runs one Attempt through the same gate,
// pacer, budget and verdicts as a chunk, and concludes with the conclusion table.
// @ref LLP 0027#call
#include <algorithm>
#include <utility>

#include "engine/attempt.h"
#include "engine/conclusion.h"
#include "engine/request.h"
#include "engine/sink_impl.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"
#include "fwdsink/forward_pack.h"
#include "fwdsink/pack_manifest.h"
#include "io/file_reader.h"

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

void Add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

// Appends the whole of `m` to `body` if it is still the file its manifest names; returns
// why not otherwise ("gone", "grew", "changed", "torn").
std::string_view ReadMember(const PackMember& m, std::string& body) {
  // Opened never through a link (O_NOFOLLOW) and without blocking on a FIFO, checked on
  // the open descriptor, then read straight into the body, capped at the size the
  // manifest names: four system calls a member (LLP 0027#figures). A member rewritten in
  // between is caught by the size, the mtime or the read itself. @ref LLP 0023#spool
  Result<internal::FileReader> file = internal::FileReader::Open(m.path);
  if (!file.ok()) return file.status().code() == StatusCode::kNotFound ? "gone" : "torn";
  const Result<internal::FileInfo> info = file->Stat();
  if (!info.ok() || !info->regular) return "torn";
  // Grown: rows appended after hand-over (sent alone, as LLP 0023#handover keeps them);
  // anything else is a rewrite.
  if (info->size > m.size) return "grew";
  if (info->size != m.size || info->mtime_ns != m.mtime_ns) return "changed";
  const std::size_t at = body.size();
  body.resize(at + static_cast<std::size_t>(m.size));
  const Result<std::size_t> got =
      file->ReadAt(0, body.data() + at, static_cast<std::size_t>(m.size));
  std::string_view bad;
  if (!got.ok() || *got != m.size) {
    bad = "changed";
  } else if (m.size == 0 || body.back() != '\n') {
    bad = "torn";  // whole lines only: a member must end with '\n' (a sealed partition does)
  }
  if (!bad.empty()) body.resize(at);
  return bad;
}

}  // namespace

// One ForwardPack call. Like ForwardSink::Call, it only carries out: the Attempt decides
// what a response means, the conclusion table what an ending writes.
class ForwardSink::PackCall {
 public:
  PackCall(Impl& sink, const std::string& key, const std::vector<PackMember>& members)
      : sink_(sink),
        key_(key),
        members_(members),
        stop_(sink.stop.get_token()),
        core_{.options = sink.options,
              .endpoints = *sink.deps.endpoints,
              .credentials = sink.credentials,
              .counters = sink.counters,
              .time = *sink.deps.time,
              .random = sink.deps.random,
              .stop = stop_,
              .content_encoding = sink.encoder.content_encoding(),
              .emit = [this](Event e) { Emit(std::move(e)); },
              .set_state = [this](State s) { sink_.SetState(std::move(s)); },
              .observer = sink.deps.on_attempt,
              .pacing = pacing_,
              .route = route_,
              .bisection = bisection_} {}

  PackResult Forward() {
    FWDSINK_CHECK(!members_.empty());
    if (stop_.stop_requested()) {
      End(Ending::kAborted, {});
      return Finish();
    }
    if (!TakeBudget()) {
      End(Ending::kAborted, {});
      return Finish();
    }
    if (!Read()) return Finish();
    if (!sink_.encoder.Encode(body_, wire_)) {
      End(Ending::kEncodeFailed,
          {.key = key_,
           .reason = "encode_failed",
           .message = "compressing pack " + key_ + " failed: " + sink_.encoder.error()});
      return Finish();
    }
    Send();
    return Finish();
  }

 private:
  PackResult Finish() {
    if (budget_held_ > 0) sink_.deps.inflight->Give(budget_held_);
    budget_held_ = 0;
    sink_.SetState({});
    return std::move(out_);
  }

  void End(Ending ending, const Facts& facts) {
    fwdsink::Conclude(ending, facts, out_.result, sink_.counters, core_.emit);
  }

  void Emit(Event e) {
    if (!sink_.deps.on_event) return;
    e.label = sink_.options.label;
    if (e.partition.empty()) e.partition = members_.front().partition;
    if (e.key.empty()) e.key = key_;
    if (sink_.deps.endpoints->size() > 1) e.endpoint = sink_.deps.endpoints->at(route_.ep).name;
    sink_.deps.on_event(e);
  }

  // Takes room in the in-flight budget for the pack before its members are read: their
  // bytes, twice when they are compressed (the raw body and the wire), as a chunk of
  // full size is counted. Waits for it until Close(). @ref LLP 0014#inflight-cap
  bool TakeBudget() {
    std::uint64_t bytes = 0;
    for (const PackMember& m : members_) bytes += m.size;
    if (sink_.encoder.compression() != Compression::kIdentity) bytes *= 2;
    if (!sink_.WaitForInflight(bytes, members_.front().partition, stop_)) return false;
    budget_held_ = bytes;
    return true;
  }

  // Reads every member; false (bad_member set, nothing sent) when one is not as its
  // manifest says. @ref LLP 0027#changed
  bool Read() {
    std::uint64_t total = 0;
    for (const PackMember& m : members_) total += m.size;
    body_.reserve(total);
    for (std::size_t i = 0; i < members_.size(); ++i) {
      const std::string_view bad = ReadMember(members_[i], body_);
      if (!bad.empty()) {
        out_.bad_member = i;
        out_.bad_reason = std::string(bad);
        out_.result.outcome = Outcome::kPartitionError;
        out_.result.reason = out_.bad_reason;
        out_.result.message = "pack member " + members_[i].partition + " is " + out_.bad_reason +
                              " since its manifest was written; nothing sent";
        return false;
      }
      const auto from = body_.end() - static_cast<std::ptrdiff_t>(members_[i].size);
      out_.rows.push_back(static_cast<std::uint64_t>(std::count(from, body_.end(), '\n')));
    }
    return true;
  }

  // The pack's one request, identical bytes under an identical key on every attempt.
  // @ref LLP 0014#retry-in-place
  void Send() {
    std::uint64_t rows = 0;
    for (std::uint64_t r : out_.rows) rows += r;
    std::vector<ManifestMember> ids;
    for (const PackMember& m : members_) ids.push_back({m.partition, m.size, m.mtime_ns});
    Request request{.partition = members_.front().partition,
                    .range = {.begin = 0, .end = body_.size(), .rows = rows},
                    .key = key_,
                    .body = body_,
                    .wire = &wire_,
                    .members = MemberKeys(ids)};
    const ForwardOptions& options = sink_.options;
    if (!options.idempotency_query_param.empty()) {
      request.query = options.idempotency_query_param + "=" + PercentEncode(request.key);
    }
    sink_.credentials.TakeNewer(sink_.deps.credentials.get());  // @ref LLP 0024#reload
    Attempt attempt(core_, request);
    RunAttempt(attempt);
    if (attempt.status_seen()) out_.result.status = *attempt.status_seen();
    if (attempt.throttled()) out_.result.throttled = true;
    Finished(attempt);
  }

  // The loop that sleeps and posts for one attempt: ForwardSink::Call's, for one request.
  // @ref LLP 0014#attempt
  void RunAttempt(Attempt& attempt) {
    Attempt::Step step = attempt.Start();
    for (;;) {
      switch (step.kind) {
        case Attempt::Step::Kind::kDone: return;
        case Attempt::Step::Kind::kPost: step = Post(attempt); break;
        case Attempt::Step::Kind::kWait: step = attempt.Woke(Sleep(step)); break;
      }
    }
  }

  Attempt::Step Post(Attempt& attempt) {
    const Request& request = attempt.request();
    TimeSource& time = *sink_.deps.time;
    const MonotonicTime posted = time.MonotonicNow();
    TransportResult answer = sink_.credentials.links[attempt.endpoint()].transport->Post(
        attempt.headers(), *request.wire, request.query, attempt.limits());
    const auto took = time.MonotonicNow() - posted;
    if (sink_.deps.latency) sink_.deps.latency->Observe(took);
    return attempt.Answered(std::move(answer),
                            std::chrono::duration_cast<std::chrono::microseconds>(took));
  }

  // As ForwardSink::Call::Sleep: Close() and a failover that leaves the endpoint cut it
  // short. @ref LLP 0019#wake
  Attempt::Woken Sleep(const Attempt::Step& step) {
    const milliseconds wait =
        std::max(milliseconds::zero(),
                 std::chrono::ceil<milliseconds>(step.wake_at - sink_.deps.time->MonotonicNow()));
    Sleeper& sleeper = *sink_.deps.sleeper;
    if (!step.on_endpoint) {
      return sleeper.SleepFor(wait, stop_) ? Attempt::Woken::kElapsed : Attempt::Woken::kStopped;
    }
    const Endpoints::Waiting on = sink_.deps.endpoints->WaitOn(route_.ep, route_.moves_seen, stop_);
    if (!on.left() && sleeper.SleepFor(wait, on.token())) return Attempt::Woken::kElapsed;
    return stop_.stop_requested() ? Attempt::Woken::kStopped : Attempt::Woken::kLeft;
  }

  void Finished(const Attempt& attempt) {
    const Attempt::End& end = attempt.end();
    switch (end.kind) {
      case Attempt::End::Kind::kAborted: return End(Ending::kAborted, {});
      case Attempt::End::Kind::kBadToken:
        return End(Ending::kAuthFailed,
                   {.key = key_, .reason = "bad_token_value", .message = end.message});
      case Attempt::End::Kind::kGiveUp: return GiveUp(attempt);
      case Attempt::End::Kind::kVerdict: break;
    }
    const Verdict& v = end.verdict;
    if (v.action == Action::kAcknowledge) return Acked();
    const std::optional<Ending> ending = EndingFor(v);
    FWDSINK_CHECK(ending.has_value());
    const Facts facts{.key = key_,
                      .status = v.status,
                      .reason = v.reason.empty() ? "http_" + std::to_string(v.status) : v.reason,
                      .message = v.message + " for pack " + key_ + " of " +
                                 std::to_string(members_.size()) + " partitions" +
                                 (v.server_message.empty() ? "" : ": " + v.server_message),
                      .server_message = v.server_message,
                      .begin = 0,
                      .end = body_.size(),
                      .rows = attempt.request().range.rows,
                      .respool = v.respool_reason};
    switch (*ending) {
      case Ending::kSplit:
      case Ending::kPoisoned: return Unpack(v, facts);
      default: return End(*ending, facts);
    }
  }

  // The server refused the pack's data, none of it stored: its members go alone, where a
  // 413 splits by rows and a bad row is dead-lettered in its own partition. Counted and
  // said as a split. @ref LLP 0027#refusals
  void Unpack(const Verdict& v, Facts facts) {
    facts.message = "HTTP " + std::to_string(v.status) + " for pack " + key_ + "; its " +
                    std::to_string(members_.size()) + " partitions go alone";
    End(Ending::kSplit, facts);
    out_.unpack = true;
    out_.result.outcome = Outcome::kRespooled;
    out_.result.status = v.status;
    out_.result.reason = facts.reason;
    out_.result.message = facts.message;
  }

  void GiveUp(const Attempt& attempt) {
    const Attempt::End& end = attempt.end();
    End(Ending::kGiveUp,
        {.key = key_,
         .status = end.verdict.status,
         .reason = end.verdict.reason,
         .message = "inline budget of " +
                    std::to_string(sink_.options.backpressure.inline_budget.count()) +
                    " ms would be passed by a further " + std::to_string(end.would_wait.count()) +
                    " ms wait after " + std::to_string(attempt.attempts()) + " attempt(s); pack " +
                    key_ + " kept",
         .attempt = attempt.attempts(),
         .wait = end.would_wait,
         .begin = 0,
         .end = body_.size(),
         .respool = RespoolReasonFor(end.verdict.retry_cause)});
  }

  // Every member is delivered: the pack's counts, then one forward.delivered per member
  // with its rows (dashboards count partitions and rows as before).
  void Acked() {
    Counters& c = sink_.counters;
    const std::uint64_t rows = [&] {
      std::uint64_t n = 0;
      for (std::uint64_t r : out_.rows) n += r;
      return n;
    }();
    Add(c.chunks_acked);
    Add(c.packs_sent);
    Add(c.partitions_packed, members_.size());
    Add(c.rows_acked, rows);
    Add(c.bytes_acked, body_.size());
    c.last_ack_time_ms.store(
        static_cast<std::uint64_t>(std::chrono::duration_cast<milliseconds>(
                                       sink_.deps.time->SystemNow().time_since_epoch())
                                       .count()),
        std::memory_order_relaxed);
    EndpointEntry& entry = sink_.deps.endpoints->at(route_.ep);
    Add(entry.counters.chunks_acked);
    Add(entry.counters.bytes_acked, body_.size());
    ForwardResult& r = out_.result;
    r.outcome = Outcome::kDelivered;
    r.chunks_acked = 1;
    r.rows_acked = rows;
    r.bytes_acked = body_.size();
    r.resume_offset = body_.size();
    Emit({.name = events::kForwardPackDelivered,
          .begin = 0,
          .end = members_.size(),
          .message = "pack " + key_ + " of " + std::to_string(members_.size()) + " partitions (" +
                     std::to_string(rows) + " rows) delivered"});
    for (std::size_t i = 0; i < members_.size(); ++i) {
      Add(c.partitions_delivered);
      Emit({.name = events::kForwardDelivered,
            .partition = members_[i].partition,
            .end = members_[i].size,
            .message = "partition delivered (" + std::to_string(out_.rows[i]) + " rows, in pack " +
                       key_ + ")"});
    }
  }

  Impl& sink_;
  const std::string& key_;
  const std::vector<PackMember>& members_;
  std::stop_token stop_;
  std::string body_;
  std::uint64_t budget_held_ = 0;  // taken from the in-flight budget until Finish()
  std::string wire_;
  PackResult out_;
  PacingReport pacing_;
  Route route_;
  Bisection bisection_;
  SendCore core_;  // last: refers to the members above
};

PackResult ForwardSink::ForwardPack(const std::string& key,
                                    const std::vector<PackMember>& members) {
  return PackCall(*impl_, key, members).Forward();
}

}  // namespace fwdsink
