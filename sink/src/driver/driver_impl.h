// SPDX-License-Identifier: Apache-2.0
// Private to the driver: its state (Driver::Impl), its senders (struct Sender) and the pass's
// permanent-error watch, shared by the files that implement it: driver.cc (ticks and a
// partition's sending), senders.cc (the hand-out to several senders, the limit),
// partition_outcomes.cc (what each outcome does to the spool) and spool_upkeep.cc
// (repairs, quarantine, hand-over, dead-letter caps). @ref LLP 0021
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "driver/sender_slots.h"
#include "fwdsink/concurrency.h"
#include "fwdsink/driver.h"
#include "fwdsink/endpoints.h"
#include "fwdsink/forward_pack.h"
#include "fwdsink/overload.h"
#include "fwdsink/pack_manifest.h"
#include "spool/cursor_writer.h"

namespace fwdsink::internal {

// Watches one pass for "every request failed the same permanent way": a 4xx we cannot
// act on (404, 405, 415...), a 5xx not retried, or a configuration code, with the same
// status and reason for every partition tried, and nothing acknowledged.
// @ref LLP 0017#permanent-errors
class PermanentErrorWatch {
 public:
  void Note(const ForwardResult& r) {
    if (r.outcome == Outcome::kAborted) return;
    const bool permanent =
        r.chunks_acked == 0 &&
        (r.outcome == Outcome::kConfigError || (r.outcome == Outcome::kRespooled &&
                                                (r.respool_reason == RespoolReason::kClientError ||
                                                 r.respool_reason == RespoolReason::kServerError) &&
                                                r.status != 0));
    if (!permanent) {
      broken_ = true;
      return;
    }
    if (!first_) {
      first_ = PermanentError{.status = r.status,
                              .reason = r.reason,
                              .message = r.server_message.empty() ? r.message : r.server_message,
                              .outcome = r.outcome};
    } else if (first_->status != r.status || first_->reason != r.reason) {
      broken_ = true;
    }
  }
  std::optional<PermanentError> Result() const { return broken_ ? std::nullopt : first_; }

 private:
  std::optional<PermanentError> first_;
  bool broken_ = false;
};

}  // namespace fwdsink::internal

namespace fwdsink {

// The last stable limit known for the endpoint in use (another driver's, made from the
// same endpoints), if any: where the driver's limit starts. @ref LLP 0018#start
inline std::optional<std::size_t> KnownStableLimit(const ForwardDeps& deps) {
  if (!deps.endpoints) return std::nullopt;
  const EndpointEntry& e = deps.endpoints->at(deps.endpoints->active());
  const std::size_t n = e.stable_limit->load(std::memory_order_relaxed);
  return n > 0 ? std::optional<std::size_t>(n) : std::nullopt;
}

// Adds what one call (a partition's or a pack's) acknowledged to the tick's report.
inline void AddAcked(TickReport& report, const ForwardResult& r) {
  report.chunks_acked += r.chunks_acked;
  report.rows_acked += r.rows_acked;
  report.bytes_acked += r.bytes_acked;
  report.throttled = report.throttled || r.throttled;
}

// One sender: a ForwardSink and the cursor writer of the partition it holds (a
// CursorWriter has one slot, so each sender has its own; they write different
// partitions' cursors, and the Spool holds nothing but its path). @ref LLP 0018#cursors
struct Sender {
  std::unique_ptr<ForwardSink> sink;
  std::unique_ptr<CursorWriter> cursors;
  // Its part of the slot pool, shared with its sink (the sink's sleeper, which lends the
  // own slot for a long wait, and its request slots). @ref LLP 0018#lend
  std::shared_ptr<SenderSlot> slot;
};

// Everything the driver keeps; the public class is its handle. Tick() and what it
// calls run on the driver thread, and a partition's work (ForwardOne and below) on the
// sender thread that holds it.
struct Driver::Impl {
  Impl(SpoolLock l, DriverOptions o, ForwardDeps d, Spool s)
      : lock(std::move(l)),
        options(std::move(o)),
        deps(std::move(d)),
        spool(std::move(s)),
        overload(options.tick_pauses),
        limit(options.concurrency, KnownStableLimit(deps)),
        pool([this] { return limit.limit(); }),
        inflight(std::make_shared<InflightBudget>(options.forward.max_inflight_bytes)) {
    counters.concurrency_limit.store(limit.limit(), std::memory_order_relaxed);
  }

  Status MakeSenders();
  TickReport Tick();
  void Run();
  // A sender's work on item `i` of a hand-out, its outcomes in the sender's own report.
  using SenderWork = std::function<void(Sender& sender, std::size_t i, TickReport& mine)>;
  // Hands items 0..count-1 out in order to up to limit senders at once.
  void HandOut(std::size_t count, const SenderWork& work, TickReport& report);
  void SenderLoop(Sender& sender, std::size_t count, const SenderWork& work, TickReport& report);
  // Sends the ready partitions, oldest first, on up to limit senders at once.
  void SendAll(const std::vector<ReadyPartition>& ready, TickReport& report);
  // Each answered request of a sender's sink: the limit learns from it. @ref LLP 0018#signals
  void OnAttempt(const AttemptRecord& r);
  // The limit learns from one request to endpoint `ep`, and tells the endpoint the
  // limit that held there. @ref LLP 0018#start
  void Observe(std::chrono::microseconds rtt, RequestSignal signal, std::size_t ep);
  void LimitMoved(const LimitChange& c);
  // Where partition `p` resumes (its cursor and journal), or nullopt when its cursor
  // cannot be read.
  std::optional<CursorState> StartCursor(const ReadyPartition& p, TickReport& report);
  void ForwardOne(Sender& sender, const ReadyPartition& p, TickReport& report);
  // Sends `p` from its cursor once; true when it stopped at a row set aside and goes on.
  bool ForwardFrom(Sender& sender, const ReadyPartition& p, TickReport& report);
  bool LongRowAside(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  void Conclude(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  void ReportPermanentError(TickReport& report);
  bool DeadLetter(Sender& sender, const ReadyPartition& p, const PoisonedChunk& chunk,
                  TickReport& report);
  void Delivered(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  void Torn(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  // Records a failure and gives the partition up past the horizon.
  void Failed(const ReadyPartition& p, std::uint64_t resume, const ForwardResult& r,
              TickReport& report);
  // Moves partition `name` to dead/ from `resume` on, less the ranges its `journal` holds
  // as acknowledged past a gap, with the give-up's counters and event; false (a spool
  // error said) when it could not. @ref LLP 0014#horizon-gaps
  bool GiveUp(const std::string& name, std::uint64_t resume,
              const std::vector<CursorRange>& journal, const ForwardResult& r, TickReport& report);
  void SpoolError(std::string_view partition, std::string_view reason, std::string message,
                  TickReport* report);
  void Emit(Event e) const;
  // Hardening (@ref LLP 0023): folders back, refused entries aside, changed files kept.
  void RepairFolders(TickReport& report);
  void QuarantineRefused(const std::vector<RefusedEntry>& refused, TickReport& report);
  bool HandOverChanged(const ReadyPartition& p, const ForwardResult& r, TickReport& report);
  [[nodiscard]] bool KeepPoisonCursor(const ReadyPartition& p, const ForwardResult& r,
                                      TickReport& report);
  void NotDurable(const ReadyPartition& p, std::string message, TickReport& report);
  // Enforces options.dead_caps. @ref LLP 0025#caps
  void PurgeDeadOverCaps();
  // Packs of small partitions (packs.cc). @ref LLP 0027
  // Settles the manifests an earlier tick or run left; false when one stays unsettled.
  bool ResumePacks(TickReport& report);
  // Sends the packs chosen from `ready`; returns the partitions to send alone.
  std::vector<ReadyPartition> SendPacks(const std::vector<ReadyPartition>& ready,
                                        TickReport& report);
  // Marks a partition refused in a pack or torn: later ticks send it alone.
  void SendAlone(const std::string& name) {
    std::lock_guard guard(pack_mu);
    pack_alone.insert(name);
  }
  // Runs a manifest to its end (delivered, resolved, unpacked); false when it stays.
  bool RunPack(Sender& sender, PackManifest manifest, TickReport& report);
  bool DeliverPack(PackManifest& manifest, TickReport& report);
  // A respooled pack: its failure recorded, its members given up past the horizon.
  void PackFailed(const PackManifest& manifest, const ForwardResult& r, TickReport& report);
  std::optional<PackManifest> ResolvePack(const PackManifest& manifest, std::size_t bad,
                                          const std::string& reason, TickReport& report);
  bool UnpackAlone(Sender& sender, const PackManifest& manifest, TickReport& report);

  SpoolLock lock;  // first: held for the driver's whole life
  const DriverOptions options;
  ForwardDeps deps;
  // The driver thread between ticks; during SendAll, each sender for its own partition
  // (and its cursor writer's worker), the driver thread not at all.
  Spool spool;
  std::vector<Sender> senders;  // fixed after MakeSenders(); senders[0] is sink()
  OverloadLevel overload;       // driver thread only
  AdaptiveLimit limit;          // thread-safe; shared by the senders
  SlotPool pool;                // thread-safe; each sender's SenderSlot takes from it
  // The bytes in flight of every sender (each sender's requests beyond its first come
  // from `pool`, through its SenderSlot). @ref LLP 0014#window
  std::shared_ptr<InflightBudget> inflight;
  std::stop_source stop;
  DriverCounters counters;
  std::atomic<bool> ticking{false};    // inside Tick(): spool() is off limits
  std::atomic<bool> stop_tick{false};  // a sender saw an endpoint-wide stop
  std::atomic<std::size_t> next{0};    // the next item (partition, pack) to hand out
  std::mutex report_mu;
  internal::PermanentErrorWatch pass_errors;  // guarded by report_mu; reset per tick
  std::set<std::string> unmovable;            // refused entries reported already (driver thread)
  std::set<std::string> pack_settled;  // members ResumePacks handled this tick (driver thread)
  std::mutex pack_mu;
  // Refused in a pack or torn: sent alone. Guarded by pack_mu while the senders of
  // SendPacks run; read by the driver thread between them.
  std::set<std::string> pack_alone;
};

}  // namespace fwdsink
