// SPDX-License-Identifier: Apache-2.0
// fwdsink-bench-pacing-sim: senders against a simulated token-bucket server, on a
// simulated clock, with the real policy (DecideWait, jitter), gate (EndpointGate),
// pacer (EndpointPacer) and driver pause ladder (OverloadLevel). Figure "herd" of
// LLP 0030: a fleet after an outage. @ref LLP 0030#pacing
//
//   fwdsink-bench-pacing-sim --senders 1000 --chunks 50 --unit requests --rate 250
//       --burst 50 --outage-s 60 --retry-after 5|none|bucket --jitter 0.5 --pacing on|off
//
// Prints one line of key=value: requests, refused, peak_rps_10s (peak requests per
// second in the 10 s after recovery), drain_s (recovery to the last acceptance),
// ideal_s (what the bucket allows for the backlog), every_row_once (each chunk accepted
// exactly once); for a fleet (figure 11) fleet_goodput and jain over the window all send,
// and for one that changes (--backlogs 1,1.5,2,3, --join-s 20: figures 11c-11e)
// drain_goodput, first_finish_s, last_finish_s, finish_ratio, join_share and finish_floor
// (the least last/first any sharing after the first finish could give: the whole backlog
// at the limit's rate, over the first finish; LLP 0016#frontier). On stderr when set:
// PACING_SIM_SERIES (accepted per 10 s), PACING_SIM_STATES (every 10 s from recovery, the senders
// still holding a backlog by what they wait for), PACING_SIM_TRACE (every refusal),
// PACING_SIM_RATES=i, _SHARES. The controller's knobs (--decrease, --increase, --probe-max,
// --repeat-decrease, --repeat-within-ms, --share-others, ...) override PacingPolicy's
// defaults, for sweeps. --advertise yes: every response carries the bucket's quota and
// what is left of it, as fwdsink-central --ratelimit-headers (LLP 0016#shared-quota).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "fwdsink/backoff.h"
#include "fwdsink/gate.h"
#include "fwdsink/overload.h"
#include "fwdsink/pacer.h"

namespace {

using namespace std::chrono_literals;
using fwdsink::MonotonicTime;
using std::chrono::milliseconds;

struct Config {
  int senders = 1000;
  int chunks = 50;  // per sender
  // Per-sender multiples of `chunks` (--backlogs 1,1.5,2,3: a fleet whose daemons finish
  // one after another, figure 11c); empty: every sender holds `chunks`.
  std::vector<double> backlogs;
  // The last sender starts this late (--join-s: a daemon joining a fleet that already
  // shares the limit, figure 11d); 0: all start together.
  double join_s = 0;
  bool bytes = false;  // the bucket counts bytes (else requests)
  double rate = 250;   // units/s
  double burst = 50;   // units
  double chunk_bytes = 65536;
  double outage_s = 60;
  std::string retry_after = "5";  // seconds | none | bucket (ceil of the deficit, >= 1)
  double jitter = 0.5;
  bool pacing = true;
  bool shared = false;       // one gate and pacer for all senders (one process)
  bool advertise = false;    // every response says the bucket (RateLimit: rate, burst, left)
  double latency_s = 0.005;  // per request, plus bytes at line_rate
  double line_rate = 200e6;
  double horizon_s = 3600;
  unsigned seed = 1;
  std::size_t outage_phase_attempt = fwdsink::BackpressurePolicy{}.outage_phase_attempt;
  fwdsink::PacingPolicy pacing_policy{};  // --decrease --ss-decrease --increase (tuning)
};

double Secs(MonotonicTime::duration d) { return std::chrono::duration<double>(d).count(); }
MonotonicTime::duration Dur(double s) {
  return std::chrono::duration_cast<MonotonicTime::duration>(std::chrono::duration<double>(s));
}

// What a sender with a backlog is waiting for (PACING_SIM_STATES).
enum class Doing { kSending, kGate, kPacer, kRetryAfter, kLadder, kRespool, kCount };
constexpr const char* kDoing[] = {"sending", "gate", "pacer", "retry_after", "ladder", "respool"};

struct Sender {
  std::shared_ptr<fwdsink::EndpointGate> gate;
  std::shared_ptr<fwdsink::EndpointPacer> pacer;
  fwdsink::OverloadLevel overload;
  int next_chunk = 0;
  std::size_t attempt = 0;
  MonotonicTime chunk_first{};
  bool chunk_started = false;
  Doing doing = Doing::kSending;
  std::size_t rung = 0;  // the ladder rung slept on (doing == kLadder)
};

class Sim {
 public:
  explicit Sim(Config c) : c_(c), rng_(c.seed), tokens_(c.burst) {
    random_ = [this] { return unit_(rng_); };
    policy_.jitter = c.jitter;
    policy_.outage_phase_attempt = c.outage_phase_attempt;
    auto gate = std::make_shared<fwdsink::EndpointGate>();
    fwdsink::PacingPolicy pp = c.pacing_policy;
    pp.enabled = c.pacing;
    auto pacer = std::make_shared<fwdsink::EndpointPacer>(pp);
    for (int i = 0; i < c.senders; ++i) {
      Sender s;
      s.gate = c.shared ? gate : std::make_shared<fwdsink::EndpointGate>();
      s.pacer = c.shared ? pacer : std::make_shared<fwdsink::EndpointPacer>(pp);
      senders_.push_back(std::move(s));
      accepted_.push_back(std::vector<int>(ChunksOf(i), 0));
      // Started within the first 100 ms, as a fleet does when it fails together (the
      // joiner of --join-s that much later).
      const double join = i == c.senders - 1 ? c.join_s : 0.0;
      Schedule(t0_ + Dur(join + 0.1 * unit_(rng_)), i);
    }
  }

  void Run() {
    while (!queue_.empty()) {
      auto [t, i] = queue_.top();
      queue_.pop();
      if (Secs(t - t0_) > c_.horizon_s) break;
      if (states_) States(Secs(t - t0_));
      Step(t, i);
    }
  }

  void Report() const {
    const double recovery = c_.outage_s;
    int peak = 0;
    for (int s = static_cast<int>(recovery); s < static_cast<int>(recovery) + 10; ++s) {
      if (s < static_cast<int>(per_second_.size())) peak = std::max(peak, per_second_[s]);
    }
    double total = 0;
    for (int i = 0; i < c_.senders; ++i) total += ChunksOf(i) * (c_.bytes ? c_.chunk_bytes : 1);
    const double ideal = std::max(0.0, total - c_.burst) / c_.rate;
    // Every chunk accepted at most once (a duplicate is a bug), and all of them within
    // the horizon (a herd that never drains is a result, reported as drained=no).
    if (std::getenv("PACING_SIM_SERIES")) {
      // Accepted units per 10 s (and the senders still holding a backlog), to see where
      // a drain loses time.
      std::vector<double> per10;
      for (const auto& [t, i] : accept_log_) {
        const auto b = static_cast<std::size_t>(t / 10);
        if (per10.size() <= b) per10.resize(b + 1);
        per10[b] += c_.bytes ? c_.chunk_bytes : 1;
      }
      for (std::size_t b = 0; b < per10.size(); ++b)
        std::fprintf(stderr, "t=%zu-%zu s accepted %.0f (%.2f of capacity)\n", b * 10, b * 10 + 10,
                     per10[b], per10[b] / (10 * c_.rate));
    }
    double window = 0, fleet_goodput = 0, jain = 0;
    if (!accept_log_.empty()) FleetWindow(window, fleet_goodput, jain);
    const Changes changes = FleetChanges(total);
    bool once = true, drained = true;
    for (const auto& v : accepted_) {
      for (int n : v) {
        once = once && n <= 1;
        drained = drained && n == 1;
      }
    }
    std::printf(
        "senders=%d chunks=%d unit=%s rate=%g burst=%g retry_after=%s jitter=%g pacing=%s "
        "requests=%llu refused=%llu refused_pct=%.2f peak_rps_10s=%d capacity_rps=%.1f "
        "peak_ratio=%.2f drain_s=%.1f ideal_s=%.1f drain_ratio=%.3f goodput=%.3f "
        "every_row_once=%s drained=%s fleet_window_s=%.1f fleet_goodput=%.3f jain=%.3f "
        "drain_goodput=%.3f first_finish_s=%.1f last_finish_s=%.1f finish_ratio=%.3f "
        "join_share=%.3f finish_floor=%.3f\n",
        c_.senders, c_.chunks, c_.bytes ? "bytes" : "requests", c_.rate, c_.burst,
        c_.retry_after.c_str(), c_.jitter, c_.pacing ? "on" : "off",
        static_cast<unsigned long long>(requests_), static_cast<unsigned long long>(refused_),
        requests_ ? 100.0 * refused_ / requests_ : 0.0, peak, CapacityRps(), peak / CapacityRps(),
        last_accept_ - recovery, ideal, (last_accept_ - recovery) / ideal,
        accepted_units_ / std::max(1e-9, last_accept_ - first_accept_after_) / c_.rate,
        once ? "yes" : "NO", drained ? "yes" : "no", window, fleet_goodput, jain,
        changes.drain_goodput, changes.first_finish, changes.last_finish,
        changes.last_finish / std::max(1e-9, changes.first_finish), changes.join_share,
        ideal / std::max(1e-9, changes.first_finish));
  }

 private:
  int ChunksOf(int i) const {
    if (c_.backlogs.empty()) return c_.chunks;
    const double m = c_.backlogs[static_cast<std::size_t>(i) % c_.backlogs.size()];
    return std::max(1, static_cast<int>(std::lround(m * c_.chunks)));
  }

  // Figures 11c-11e, a fleet that changes: aggregate goodput over the whole drain (from
  // the first request to the last acceptance, less the burst); the first and the last
  // sender's finish (its last acceptance, from the start); and, with --join-s, the
  // joiner's share of what was accepted in the 5 s before 30 s after it joined, over
  // its fair share (1 / senders). @ref LLP 0016#fleet
  struct Changes {
    double drain_goodput = 0, first_finish = 0, last_finish = 0, join_share = 0;
  };
  Changes FleetChanges(double total) const {
    Changes r;
    if (accept_log_.empty()) return r;
    std::vector<double> last(senders_.size(), 0);
    for (const auto& [t, i] : accept_log_) last[i] = std::max(last[i], t);
    r.first_finish = *std::min_element(last.begin(), last.end());
    r.last_finish = *std::max_element(last.begin(), last.end());
    r.drain_goodput = std::max(0.0, total - c_.burst) / (c_.rate * std::max(1e-9, r.last_finish));
    if (c_.join_s > 0) {
      const double to = c_.join_s + 30, from = to - 5;
      double all = 0, joiner = 0;
      for (const auto& [t, i] : accept_log_) {
        if (t <= from || t > to) continue;
        all += 1;
        if (i == c_.senders - 1) joiner += 1;
      }
      r.join_share = all > 0 ? joiner / all * c_.senders : 0;
    }
    return r;
  }

  // Figure 11's window: from the first request to the first sender's last acceptance
  // (every sender still sending); aggregate goodput over it (less the burst) and Jain's
  // index over the senders' accepted units in it.
  void FleetWindow(double& window, double& goodput, double& jain) const {
    std::vector<double> last(senders_.size(), 0), units(senders_.size(), 0);
    for (const auto& [t, i] : accept_log_) last[i] = std::max(last[i], t);
    window = *std::min_element(last.begin(), last.end());
    const double cost = c_.bytes ? c_.chunk_bytes : 1;
    double total = 0;
    for (const auto& [t, i] : accept_log_) {
      if (t > window) continue;
      units[i] += cost;
      total += cost;
    }
    double sq = 0;
    for (double u : units) sq += u * u;
    if (std::getenv("PACING_SIM_SHARES")) {
      for (std::size_t i = 0; i < units.size(); ++i) std::fprintf(stderr, "%.0f ", units[i] / 1e3);
      std::fprintf(stderr, "(kB by sender in the %.1f s window)\n", window);
    }
    goodput = window > 0 ? std::max(0.0, total - c_.burst) / (c_.rate * window) : 0;
    jain = sq > 0 ? total * total / (static_cast<double>(units.size()) * sq) : 0;
  }

  // Every 10 s from recovery: the senders still holding a backlog, by what they wait for
  // (ladder waits by rung, the last counting any later), with the chunks they hold; "never
  // accepted": still on their first chunk. To see what a drain's tail is made of.
  void States(double now) {
    for (; now >= next_states_; next_states_ += 10) {
      int n[static_cast<int>(Doing::kCount)] = {}, chunks[static_cast<int>(Doing::kCount)] = {};
      int rungs[4] = {}, never = 0;
      for (std::size_t i = 0; i < senders_.size(); ++i) {
        const Sender& s = senders_[i];
        const int held = ChunksOf(static_cast<int>(i));
        if (s.next_chunk >= held) continue;
        ++n[static_cast<int>(s.doing)];
        chunks[static_cast<int>(s.doing)] += held - s.next_chunk;
        if (s.doing == Doing::kLadder) ++rungs[std::min<std::size_t>(s.rung, 3)];
        if (s.next_chunk == 0) ++never;
      }
      std::fprintf(stderr, "t=%.0f s backlog by wait:", next_states_);
      for (int k = 0; k < static_cast<int>(Doing::kCount); ++k)
        std::fprintf(stderr, " %s %d (%d chunks)", kDoing[k], n[k], chunks[k]);
      std::fprintf(stderr, "; ladder by rung:");
      for (int r : rungs) std::fprintf(stderr, " %d", r);
      std::fprintf(stderr, "; never accepted %d\n", never);
    }
  }

  double CapacityRps() const { return c_.bytes ? c_.rate / c_.chunk_bytes : c_.rate; }

  void Schedule(MonotonicTime t, int i) { queue_.push({t, i}); }

  // One step of sender i at time t: gate, pacer, send, verdict, wait.
  void Step(MonotonicTime t, int i) {
    Sender& s = senders_[i];
    if (s.next_chunk >= ChunksOf(i)) return;
    if (!s.chunk_started) {
      s.chunk_started = true;
      s.chunk_first = t;
      s.attempt = 0;
    }
    const auto hold = s.gate->Remaining(t);
    if (hold.remaining > 0ms) {
      s.doing = Doing::kGate;
      Schedule(t + fwdsink::JitterLonger(hold.remaining, c_.jitter, random_), i);
      return;
    }
    const auto size = static_cast<std::uint64_t>(c_.chunk_bytes);
    if (!pending_pace_[i]) {
      const auto pace = s.pacer->Reserve(t, size);
      if (pace > 0ms) {
        pending_pace_[i] = true;
        s.doing = Doing::kPacer;
        Schedule(t + pace, i);
        return;
      }
    }
    pending_pace_[i] = false;
    s.doing = Doing::kSending;
    Send(t, i);
  }

  void Send(MonotonicTime t, int i) {
    Sender& s = senders_[i];
    const double at = Secs(t - t0_);
    ++requests_;
    const auto sec = static_cast<std::size_t>(at);
    if (per_second_.size() <= sec) per_second_.resize(sec + 1);
    ++per_second_[sec];
    const double cost = c_.bytes ? c_.chunk_bytes : 1;
    const MonotonicTime done = t + Dur(c_.latency_s + c_.chunk_bytes / c_.line_rate);
    std::optional<milliseconds> retry_after;
    bool ok = false;
    if (at >= c_.outage_s) {
      Refill(at);
      if (tokens_ >= std::min(cost, c_.burst)) {
        tokens_ -= cost;
        ok = true;
      }
    }
    if (ok) {
      ++accepted_[i][s.next_chunk];
      accept_log_.push_back({Secs(done - t0_), i});
      if (const char* who = std::getenv("PACING_SIM_RATES");
          who && i == std::atoi(who) && at >= next_trace_) {
        next_trace_ = at + 1;
        const auto r = s.pacer->Current(done);
        std::fprintf(stderr, "t=%.2f sender %d paced %.0f B/s %.2f req/s\n", at, i, r.bytes_per_s,
                     r.requests_per_s);
      }
      if (first_accept_after_ == 0 && at >= c_.outage_s) first_accept_after_ = at;
      accepted_units_ += cost;
      last_accept_ = Secs(done - t0_);
      s.pacer->OnAccepted(done, static_cast<std::uint64_t>(c_.chunk_bytes), Quota());
      s.overload.Record(false, true);
      ++s.next_chunk;
      s.chunk_started = false;
      Schedule(done, i);
      return;
    }
    ++refused_;
    if (std::getenv("PACING_SIM_TRACE")) {
      const auto r = s.pacer->Current(t);
      std::fprintf(stderr, "t=%.2f refused sender=%d rate=%.0f B/s %.2f req/s tokens=%.0f\n", at, i,
                   r.bytes_per_s, r.requests_per_s, tokens_);
    }
    if (c_.retry_after == "bucket") {
      const double deficit =
          at < c_.outage_s ? 1.0 : (std::min(cost, c_.burst) - tokens_) / c_.rate;
      retry_after = std::chrono::seconds{static_cast<long>(std::max(1.0, std::ceil(deficit)))};
    } else if (c_.retry_after != "none") {
      retry_after = std::chrono::seconds{std::atol(c_.retry_after.c_str())};
    }
    ++s.attempt;
    const auto d = fwdsink::DecideWait(
        policy_, s.attempt, retry_after,
        std::chrono::duration_cast<milliseconds>(done - s.chunk_first), random_);
    if (d.source == fwdsink::WaitSource::kRetryAfter) s.gate->HoldUntil(done + d.wait, "sim");
    s.pacer->OnRefused(done, d.wait, Quota());
    if (d.give_up) {
      // Respooled: the driver's next tick, after its (jittered) pause.
      s.overload.Record(true, false);
      s.chunk_started = false;
      s.doing = Doing::kRespool;
      Schedule(done + fwdsink::JitterSpread(s.overload.Pause(), c_.jitter, random_), i);
      return;
    }
    s.doing = d.source == fwdsink::WaitSource::kLadder ? Doing::kLadder : Doing::kRetryAfter;
    s.rung = d.rung;
    Schedule(done + d.wait, i);
  }

  // What fwdsink-central --ratelimit-headers says with each response: the bucket's rate,
  // its burst and the whole tokens left (LLP 0016#central).
  std::optional<fwdsink::AdvertisedQuota> Quota() const {
    if (!c_.advertise) return std::nullopt;
    return fwdsink::AdvertisedQuota{
        .unit = c_.bytes ? fwdsink::QuotaUnit::kContentBytes : fwdsink::QuotaUnit::kRequests,
        .rate_per_s = c_.rate,
        .burst = static_cast<std::uint64_t>(c_.burst),
        .remaining = static_cast<std::uint64_t>(std::max(0.0, tokens_)),
        .bucket = true};
  }

  void Refill(double at) {
    const double from = std::max(refilled_at_, c_.outage_s);
    tokens_ = std::min(c_.burst, tokens_ + c_.rate * std::max(0.0, at - from));
    refilled_at_ = std::max(at, from);
  }

  struct Later {
    bool operator()(const std::pair<MonotonicTime, int>& a,
                    const std::pair<MonotonicTime, int>& b) const {
      return a.first > b.first;
    }
  };

  const Config c_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  fwdsink::UniformRandom random_;
  fwdsink::BackpressurePolicy policy_;
  const MonotonicTime t0_{std::chrono::hours{1}};
  std::vector<Sender> senders_;
  std::vector<std::vector<int>> accepted_;
  std::vector<bool> pending_pace_ = std::vector<bool>(100000, false);
  std::priority_queue<std::pair<MonotonicTime, int>, std::vector<std::pair<MonotonicTime, int>>,
                      Later>
      queue_;
  double tokens_;
  double refilled_at_ = 0;
  std::vector<int> per_second_;
  std::vector<std::pair<double, int>> accept_log_;
  const bool states_ = std::getenv("PACING_SIM_STATES") != nullptr;
  double next_states_ = c_.outage_s;
  double next_trace_ = 0;  // (time, sender) of every acceptance
  std::uint64_t requests_ = 0, refused_ = 0;
  double last_accept_ = 0, first_accept_after_ = 0, accepted_units_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--senders")
      c.senders = std::atoi(v.c_str());
    else if (k == "--chunks")
      c.chunks = std::atoi(v.c_str());
    else if (k == "--backlogs") {
      for (std::size_t at = 0; at <= v.size();) {
        const std::size_t comma = std::min(v.find(',', at), v.size());
        c.backlogs.push_back(std::atof(v.substr(at, comma - at).c_str()));
        at = comma + 1;
      }
    } else if (k == "--join-s")
      c.join_s = std::atof(v.c_str());
    else if (k == "--unit")
      c.bytes = v == "bytes";
    else if (k == "--rate")
      c.rate = std::atof(v.c_str());
    else if (k == "--burst")
      c.burst = std::atof(v.c_str());
    else if (k == "--chunk-bytes")
      c.chunk_bytes = std::atof(v.c_str());
    else if (k == "--outage-s")
      c.outage_s = std::atof(v.c_str());
    else if (k == "--retry-after")
      c.retry_after = v;
    else if (k == "--jitter")
      c.jitter = std::atof(v.c_str());
    else if (k == "--pacing")
      c.pacing = v == "on";
    else if (k == "--shared")
      c.shared = v == "yes";
    else if (k == "--advertise")
      c.advertise = v == "yes";
    else if (k == "--latency-ms")
      c.latency_s = std::atof(v.c_str()) / 1000;
    else if (k == "--horizon-s")
      c.horizon_s = std::atof(v.c_str());
    else if (k == "--decrease")
      c.pacing_policy.decrease = std::atof(v.c_str());
    else if (k == "--ss-decrease")
      c.pacing_policy.slow_start_decrease = std::atof(v.c_str());
    else if (k == "--increase")
      c.pacing_policy.increase_per_s = std::atof(v.c_str());
    else if (k == "--increase-abs")
      c.pacing_policy.increase_requests_per_s = std::atof(v.c_str());
    else if (k == "--ss-increase-abs")
      c.pacing_policy.slow_start_requests_per_s = std::atof(v.c_str());
    else if (k == "--ss-doubling-ms")
      c.pacing_policy.slow_start_doubling = milliseconds{std::atol(v.c_str())};
    else if (k == "--probe-after-ms")
      c.pacing_policy.probe_after = milliseconds{std::atol(v.c_str())};
    else if (k == "--probe-doubling-ms")
      c.pacing_policy.probe_doubling = milliseconds{std::atol(v.c_str())};
    else if (k == "--probe-max")
      c.pacing_policy.probe_max_factor = std::atof(v.c_str());
    else if (k == "--probe-past-exit")
      c.pacing_policy.probe_past_exit = std::atof(v.c_str());
    else if (k == "--share-others")
      c.pacing_policy.share_others = std::atof(v.c_str());
    else if (k == "--share-short")
      c.pacing_policy.share_short = std::atof(v.c_str());
    else if (k == "--share-room")
      c.pacing_policy.share_room = std::atof(v.c_str());
    else if (k == "--share-gap-ms")
      c.pacing_policy.share_gap = milliseconds{std::atol(v.c_str())};
    else if (k == "--share-increase")
      c.pacing_policy.share_increase = std::atof(v.c_str());
    else if (k == "--repeat-decrease")
      c.pacing_policy.repeat_decrease = std::atof(v.c_str());
    else if (k == "--repeat-within-ms")
      c.pacing_policy.repeat_within = milliseconds{std::atol(v.c_str())};
    else if (k == "--restart")
      c.pacing_policy.restart_after_refusals = static_cast<std::size_t>(std::atoi(v.c_str()));
    else if (k == "--restart-after-s")
      c.pacing_policy.restart_after_outage = milliseconds{std::atol(v.c_str()) * 1000};
    else if (k == "--phase-attempt")
      c.outage_phase_attempt = static_cast<std::size_t>(std::atoi(v.c_str()));
    else if (k == "--seed")
      c.seed = static_cast<unsigned>(std::atoi(v.c_str()));
    else {
      std::fprintf(stderr, "pacing_sim: unknown option %s\n", k.c_str());
      return 64;
    }
  }
  const bool bad_backlog = std::any_of(c.backlogs.begin(), c.backlogs.end(),
                                       [](double m) { return !(m > 0 && m <= 1000); });
  if (c.senders < 1 || c.senders > 100000 || c.chunks < 1 || !(c.rate > 0) || !(c.burst > 0) ||
      bad_backlog || !(c.join_s >= 0)) {
    std::fprintf(stderr, "pacing_sim: bad sizes\n");
    return 64;
  }
  Sim sim(c);
  sim.Run();
  sim.Report();
  return 0;
}
