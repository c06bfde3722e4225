// SPDX-License-Identifier: Apache-2.0
// Proactive pacing: one pacer per endpoint decides when the next request may go, so
// refusals stay rare. @ref LLP 0016#pacer
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>

#include "fwdsink/clock.h"
#include "fwdsink/ratelimit.h"

namespace fwdsink {

// How a pacer learns and forgets. With the defaults, a refusal sets the learned rate
// to 0.94 x the rate that was being paced (multiplicative decrease), or 0.85 x when it
// comes within 1.5 s of sending after the last such decrease; every second of accepted
// sending then adds 0.3% of that rate (additive increase), so a limit with a burst of a
// quarter second is probed about once per 20 s; past the rate that decrease cut from,
// after 6 s without a refusal, the step doubles every 0.5 s up to 24 x (the probe); a
// learned limit is forgotten after 60 s without a refusal. Before the first decrease the
// rate doubles every second from its first estimate plus a step every sender shares
// (slow start), and leaving it cuts to 0.55 x; 1.2 x the rate it cut to is the probe's
// reference until the next decrease.
// Tuned on the simulation (tests/bench/pacing_sim.cc). @ref LLP 0016#controller
struct PacingPolicy {
  // false: the pacer never waits and learns nothing (--pacing off).
  bool enabled = true;
  // Multiplicative decrease on a refusal, in (0, 1).
  double decrease = 0.94;
  // Multiplicative decrease leaving slow start (it overshoots more), in (0, 1).
  double slow_start_decrease = 0.55;
  // Additive increase per second of sending, as a fraction of the rate set by the last
  // decrease; > 0.
  double increase_per_s = 0.003;
  // ... but never less than this many requests/s per second (in the byte dimension:
  // times the mean wire size of an accepted request): one unit for every sender on a
  // limiter, so that a sender starved to a small share climbs as fast as a large one
  // (Chiu & Jain's additive increase). >= 0.
  double increase_requests_per_s = 0.05;
  // Probing (CUBIC's shape around the last refusal): once the rate has passed the rate
  // the last decrease after slow start cut from, and at least probe_after of sending has
  // gone by since that decrease without a refusal, the additive step doubles every
  // probe_doubling of sending, up to probe_max_factor x: slow near a limit that still
  // holds (a refusal comes before the rate gets back there), fast once it is gone (a
  // daemon of the fleet finished). The step stays the shared absolute one, so senders
  // probe alike. @ref LLP 0016#probe
  std::chrono::milliseconds probe_after = std::chrono::seconds{6};
  std::chrono::milliseconds probe_doubling = std::chrono::milliseconds{500};
  // >= 1; 1: no probe. On with the repeated cut below, which keeps a fleet whose limit
  // holds refused no more often than without either (LLP 0016#repeat).
  double probe_max_factor = 24;
  // After slow start's exit (no refusal since), the probe's reference is this many
  // times the rate the exit cut to: a sender whose exit left it far below its share (the
  // limiter was full of others' bursts) and that climbs that far with nothing refused
  // probes, instead of crawling at the additive step until forget_after; a lone sender,
  // whose exit lands just under the limit, is refused before it gets there. 0: no probe
  // before the first decrease after the exit. @ref LLP 0016#probe
  double probe_past_exit = 1.2;
  // A refusal that comes after less than repeat_within of sending since the last
  // decrease (one that was not slow start's exit) cuts by repeat_decrease instead: the
  // last cut did not get this sender under the limit, so the fleet is more crowded than
  // its rate said. Off when repeat_within is zero. @ref LLP 0016#repeat
  double repeat_decrease = 0.85;
  std::chrono::milliseconds repeat_within{1500};
  // A quota shared with other clients (LLP 0016#shared-quota). When responses say how
  // much of an advertised quota is left, the units that went that neither this pacer
  // sent nor the refill explains were others'. While others take more than share_others
  // of the advertised rate (smoothed over a second), a count below share_short requests
  // is a refusal without its wait: the learned controller cuts, at most once per
  // share_gap; and while the quota is shared, or what was learned came from such a cut,
  // the rate rises by at least share_increase of the advertised rate per second (a step
  // every client of the quota knows alike, so shares converge, and one left alone takes
  // the quota back within seconds). share_others = 0: off (every client paces to the
  // whole quota, and the first refused learns what the others leave).
  double share_others = 0.05;
  double share_short = 2;
  // Paced to a bucket's count, leave room for this many requests (at most half the
  // burst): a newcomer's refused requests take nothing a sender could see, and a sender
  // keeping the bucket empty would never learn it is there. 0: pace to the count.
  double share_room = 2;
  std::chrono::milliseconds share_gap{500};
  double share_increase = 0.08;
  // Slow start doubles the rate every this much accepted sending; > 0.
  std::chrono::milliseconds slow_start_doubling = std::chrono::seconds{1};
  // ... and adds this many requests/s (in the byte dimension: times the mean wire size
  // of an accepted request), doubling with it: after n doublings from a first estimate
  // e the rate is 2^n x (e + this) - this. The first estimate is each daemon's luck in
  // the limiter's initial burst (4x apart in a fleet); a step every sender shares
  // dilutes that luck before slow start ends. >= 0; 0: slow start only doubles.
  // @ref LLP 0016#fairness
  double slow_start_requests_per_s = 2.0;
  // Restart after an outage: when at least restart_after_refusals refusals in a row
  // (0 = never) span at least restart_after_outage, the last of them with a wait of at
  // most restart_max_wait (a server-given Retry-After that synchronises a fleet, not a
  // ladder rung whose own jitter already spreads it over tens of seconds), the first
  // acceptance starts the learned rate again at one request per that wait (in bytes:
  // that request's size per wait), in slow start, instead of "no limit" or what was
  // learned before: TCP's restart after a timeout, so a fleet back from an outage does
  // not send its whole backlog at once. A throttle (refused again after a 1 s
  // Retry-After) is not an outage. @ref LLP 0016#herd
  std::size_t restart_after_refusals = 3;
  std::chrono::milliseconds restart_after_outage = std::chrono::seconds{10};
  std::chrono::milliseconds restart_max_wait = std::chrono::seconds{10};
  // A learned limit with no refusal for this long is dropped ("no limit" again), and
  // an advertised quota not repeated for this long is dropped too.
  std::chrono::milliseconds forget_after = std::chrono::seconds{60};
  // The longest single pacer wait (a tiny advertised rate waits this, not a week).
  std::chrono::milliseconds max_wait = std::chrono::seconds{300};
  // Learned rates never go below these: requests/s and bytes/s.
  double min_requests_per_s = 0.2;
  double min_bytes_per_s = 4096;
  // When an advertised byte burst is smaller than a chunk on the wire, later chunks
  // shrink to fit it, but never below this many raw bytes. @ref LLP 0016#shrink
  std::size_t min_chunk_bytes = 16 * 1024;
};

// Where the pacing rate comes from.
enum class PaceSource { kNone, kLearned, kAdvertised };
[[nodiscard]] std::string_view to_string(PaceSource source);

// The rate a pacer applies now (0 = no limit in that dimension).
struct PaceRate {
  PaceSource source = PaceSource::kNone;
  double requests_per_s = 0;
  double bytes_per_s = 0;
  // The advertised burst in bytes, when the server says one (chunks larger than it
  // cannot fit: later chunks shrink to it). 0 when unknown.
  std::uint64_t burst_bytes = 0;
};

// Decides when the next request to one endpoint may go: a virtual schedule (GCRA) per
// dimension, requests and wire bytes, whose rates come from an advertised quota when
// the server sends one, else from an AIMD controller driven by what is accepted between
// refusals. Pure bookkeeping on monotonic time like EndpointGate: callers pass "now"
// and sleep themselves; it never shortens a Retry-After or a gate hold (callers wait
// for those first and for the pacer after). Ignores which partition or sender asks.
// Thread-safe: shared by every sender to the endpoint; all state guarded by mu_.
// @ref LLP 0016#pacer
class EndpointPacer {
 public:
  explicit EndpointPacer(PacingPolicy policy = {});

  // Reserves a send of `wire_bytes` at `now` or later; returns how long the caller must
  // wait first (zero: send now). Costs one lock when nothing limits.
  [[nodiscard]] std::chrono::milliseconds Reserve(MonotonicTime now, std::uint64_t wire_bytes);
  // Records an accepted request (2xx) and the quota its response advertised, if any.
  void OnAccepted(MonotonicTime now, std::uint64_t wire_bytes,
                  const std::optional<AdvertisedQuota>& quota);
  // Records a refused request (429/503) and the wait the sender takes before retrying
  // (Retry-After or a ladder rung), with the quota its response advertised, if any.
  void OnRefused(MonotonicTime now, std::chrono::milliseconds wait,
                 const std::optional<AdvertisedQuota>& quota);
  // Returns the rate applied now.
  [[nodiscard]] PaceRate Current(MonotonicTime now) const;
  // Returns whether a learned or advertised limit holds and its schedule has no room
  // left at `now` for another request of `wire_bytes` (the reservations made so far
  // included): the next one would wait, and a refusal is likelier than not near the
  // limit. False with pacing off or nothing to pace to. @ref LLP 0017#expect-when
  [[nodiscard]] bool NearLimit(MonotonicTime now, std::uint64_t wire_bytes) const;
  // Goes up each time a server's count moves the schedule later than the reservations
  // made so far: a reservation taken before is stale, and its request must reserve again
  // before it goes (a newer `remaining: 0`). Any thread. @ref LLP 0016#recheck
  [[nodiscard]] std::uint64_t schedule_epoch() const {
    return epoch_.load(std::memory_order_acquire);
  }
  [[nodiscard]] const PacingPolicy& policy() const { return policy_; }

 private:
  // One dimension (requests or bytes): a learned and an advertised rate, and the GCRA
  // schedule of the smaller.
  struct Lane {
    std::optional<double> learned;     // units/s; nullopt: nothing learned
    std::optional<double> advertised;  // units/s
    double advertised_burst = 0;       // units
    MonotonicTime advertised_at{};     // last response that carried it
    double rate_at_decrease = 0;
    bool slow_start = false;
    MonotonicTime increase_from{};    // additive increase accrues from here
    MonotonicTime tat{};              // GCRA theoretical arrival time
    double accepted_since_start = 0;  // units accepted before the first refusal
    MonotonicTime measure_from{};     // the end of the last decrease's wait
    double accepted_units = 0;        // accepted since measure_from
    double accepted_total = 0;        // accepted ever (the mean request size)
    double refused_rate = 0;          // the probe's reference (#probe); 0: none
    double sending_since_cut = 0;     // seconds of sending counted since that decrease
    bool cut_after_exit = false;      // the last decrease was not slow start's exit
    double probe_from = -1;           // sending_since_cut when the probe began; < 0: not
    // A shared quota (#shared-quota): the last advertised count, what we had accepted
    // since, and others' rate, smoothed; seen_left < 0: no count yet.
    MonotonicTime seen_at{};
    double seen_left = -1;
    double own_since_seen = 0;
    double others = 0;
    [[nodiscard]] std::optional<double> Rate() const;
    [[nodiscard]] double Tolerance() const;  // burst, in units
  };

  void Forget(MonotonicTime now);
  static void Unlearn(Lane& lane);
  void Learn(Lane& lane, MonotonicTime now, std::chrono::milliseconds wait, double floor);
  void Increase(Lane& lane, MonotonicTime now) const;
  [[nodiscard]] double Probe(Lane& lane, double step, double counted) const;
  void Advertise(const AdvertisedQuota& q, MonotonicTime now);
  void Share(Lane& lane, double left, MonotonicTime now);
  [[nodiscard]] bool Shared(const Lane& lane) const;
  [[nodiscard]] double SharedStep(const Lane& lane) const;
  [[nodiscard]] double ByteFloor() const;
  [[nodiscard]] double UnitOf(const Lane& lane) const;
  void Restart(Lane& lane, MonotonicTime now, double cost, double floor);

  const PacingPolicy policy_;
  mutable std::mutex mu_;
  Lane requests_;                           // guarded by mu_
  Lane bytes_;                              // guarded by mu_
  std::optional<MonotonicTime> first_;      // first reservation; guarded by mu_
  MonotonicTime last_refusal_{};            // guarded by mu_
  bool accepted_since_decrease_ = true;     // guarded by mu_
  MonotonicTime episode_until_{};           // refusals before it join the last decrease; mu_
  std::size_t refusals_in_a_row_ = 0;       // since the last acceptance; guarded by mu_
  std::chrono::milliseconds last_wait_{0};  // the last refusal's wait; guarded by mu_
  MonotonicTime streak_from_{};             // the first of those refusals; guarded by mu_
  bool last_cut_shared_ = false;            // the last decrease was a short count; mu_
  std::atomic<std::uint64_t> epoch_{0};     // written under mu_; read without it
};

}  // namespace fwdsink
