// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/pacer.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace fwdsink {
namespace {

using std::chrono::milliseconds;

double Secs(MonotonicTime::duration d) { return std::chrono::duration<double>(d).count(); }

// A schedule never runs more than a day ahead.
constexpr double kScheduleHorizonSecs = 86400.0;

MonotonicTime::duration FromSecs(double s) {
  // Bounded by the horizon (and NaN goes to zero).
  if (!(s > 0)) return MonotonicTime::duration::zero();
  return std::chrono::duration_cast<MonotonicTime::duration>(
      std::chrono::duration<double>(std::min(s, kScheduleHorizonSecs)));
}

// A learned controller's increase accrues per second of sending; a long silence
// (idle, or a long wait) counts as at most this much, or as half an interval of a
// slower pace (a whole interval met figure 12 too, but cost figure 11's 16 daemons
// some fairness). @ref LLP 0016#herd
constexpr double kMaxIncreaseStep = 1.0;
constexpr double kPaceIntervalsCounted = 0.5;
// The measured accepted rate replaces the paced rate as the base of a decrease when
// it was measured over at least this long and is well below the paced rate (the pacer
// was not what limited the sender).
constexpr double kMinMeasureSecs = 2.0;
constexpr double kNotBindingRatio = 0.8;
// Requests accepted before a first refusal for it to say anything about a rate.
constexpr double kMinAcceptedToLearn = 2;
// Others' rate on a shared quota is smoothed over about this long.
// @ref LLP 0016#shared-quota
constexpr double kOthersSmoothingSecs = 1.0;

}  // namespace

std::string_view to_string(PaceSource source) {
  switch (source) {
    case PaceSource::kNone: return "none";
    case PaceSource::kLearned: return "learned";
    case PaceSource::kAdvertised: return "advertised";
  }
  return "unknown";
}

std::optional<double> EndpointPacer::Lane::Rate() const {
  if (learned && advertised) return std::min(*learned, *advertised);
  return learned ? learned : advertised;
}

double EndpointPacer::Lane::Tolerance() const {
  // A learned rate allows no burst beyond the request itself: sends are spread evenly.
  if (advertised && (!learned || *advertised <= *learned)) return advertised_burst;
  return 0;
}

EndpointPacer::EndpointPacer(PacingPolicy policy) : policy_(policy) {}

milliseconds EndpointPacer::Reserve(MonotonicTime now, std::uint64_t wire_bytes) {
  if (!policy_.enabled) return milliseconds::zero();
  std::lock_guard lock(mu_);
  if (!first_) first_ = now;
  Forget(now);
  const double costs[2] = {1.0, static_cast<double>(wire_bytes)};
  Lane* lanes[2] = {&requests_, &bytes_};
  double start = 0;  // seconds from now
  for (int i = 0; i < 2; ++i) {
    const auto rate = lanes[i]->Rate();
    if (!rate) continue;
    const double tolerance = std::max(lanes[i]->Tolerance(), costs[i]) / *rate;
    start = std::max(start, Secs(lanes[i]->tat - now) + costs[i] / *rate - tolerance);
  }
  const MonotonicTime send = now + FromSecs(start);
  for (int i = 0; i < 2; ++i) {
    if (const auto rate = lanes[i]->Rate()) {
      lanes[i]->tat = std::max(lanes[i]->tat, send) + FromSecs(costs[i] / *rate);
    }
  }
  const auto wait = std::chrono::ceil<milliseconds>(send - now);
  return std::min(wait, policy_.max_wait);
}

void EndpointPacer::OnAccepted(MonotonicTime now, std::uint64_t wire_bytes,
                               const std::optional<AdvertisedQuota>& quota) {
  if (!policy_.enabled) return;
  std::lock_guard lock(mu_);
  if (!first_) first_ = now;
  accepted_since_decrease_ = true;
  const double costs[2] = {1.0, static_cast<double>(wire_bytes)};
  Lane* lanes[2] = {&requests_, &bytes_};
  const bool restart =
      policy_.restart_after_refusals > 0 && refusals_in_a_row_ >= policy_.restart_after_refusals &&
      now - streak_from_ >= policy_.restart_after_outage && last_wait_ <= policy_.restart_max_wait;
  refusals_in_a_row_ = 0;
  if (restart && !requests_.advertised && !bytes_.advertised) {
    Restart(requests_, now, costs[0], policy_.min_requests_per_s);
    Restart(bytes_, now, costs[1], ByteFloor());
    last_refusal_ = now;  // the restarted rate is kept like a learned one
  }
  for (int i = 0; i < 2; ++i) {
    lanes[i]->accepted_since_start += costs[i];
    lanes[i]->accepted_units += costs[i];
    lanes[i]->accepted_total += costs[i];
    Increase(*lanes[i], now);
  }
  if (quota) Advertise(*quota, now);
  if (quota && quota->bucket && quota->remaining && quota->rate_per_s) {
    const bool bytes = quota->unit == QuotaUnit::kContentBytes;
    Lane& lane = bytes ? bytes_ : requests_;
    lane.own_since_seen += costs[bytes ? 1 : 0];
    Share(lane, static_cast<double>(*quota->remaining), now);
  }
}

// A count of what is left of an advertised quota: others' rate, and while they take a
// share, a short count as a refusal without its wait.
// @ref LLP 0016#shared-quota
void EndpointPacer::Share(Lane& lane, double left, MonotonicTime now) {
  if (!(policy_.share_others > 0) || !lane.advertised) return;
  const double rate = *lane.advertised;
  const double dt = Secs(now - lane.seen_at);
  if (lane.seen_left >= 0 && dt > 0) {
    // What went, less what we took: the count before, plus the refill, less the count
    // now. The refill stops at the burst, and when is unknown: count the least it can
    // have brought (at least that much was others'), so that nobody reads as nobody.
    const double refill = std::min(rate * dt, lane.advertised_burst - lane.seen_left);
    // Not clipped at zero: counts are whole units, and their rounding cancels out over
    // successive counts only if no sample is cut.
    const double theirs = lane.seen_left + std::max(0.0, refill) - left - lane.own_since_seen;
    lane.others += (theirs / dt - lane.others) * std::min(1.0, dt / kOthersSmoothingSecs);
  }
  lane.seen_at = now;
  lane.seen_left = left;
  lane.own_since_seen = 0;
  const double unit = UnitOf(lane);
  if (Shared(lane) && left < policy_.share_short * unit && now >= episode_until_ &&
      accepted_since_decrease_) {
    accepted_since_decrease_ = false;
    episode_until_ = now + policy_.share_gap;
    last_refusal_ = now;
    Learn(bytes_, now, milliseconds::zero(), ByteFloor());
    Learn(requests_, now, milliseconds::zero(), policy_.min_requests_per_s);
    last_cut_shared_ = true;
  }
}

bool EndpointPacer::Shared(const Lane& lane) const {
  return policy_.share_others > 0 && lane.advertised &&
         lane.others > policy_.share_others * *lane.advertised;
}

// The additive step while a quota is shared, in `lane`'s units per second: a fraction of
// the advertised rate, the same for every client of it. 0: not shared.
double EndpointPacer::SharedStep(const Lane& lane) const {
  for (const Lane* q : {&requests_, &bytes_}) {
    // Shared now, or what was learned came from a short count (until a refusal or
    // forget_after): a daemon left alone reclaims the quota at the same step.
    if (!Shared(*q) && !(last_cut_shared_ && q->advertised && q->seen_left >= 0)) continue;
    const double step = policy_.share_increase * *q->advertised;
    if (q == &lane) return step;
    return q == &bytes_ ? step / UnitOf(bytes_) : step * UnitOf(bytes_);
  }
  return 0;
}

void EndpointPacer::OnRefused(MonotonicTime now, milliseconds wait,
                              const std::optional<AdvertisedQuota>& quota) {
  if (!policy_.enabled) return;
  std::lock_guard lock(mu_);
  if (!first_) first_ = now;
  if (quota) Advertise(*quota, now);
  if (refusals_in_a_row_++ == 0) streak_from_ = now;
  last_wait_ = wait;
  // One decrease per episode: senders refused together, or a chunk refused again
  // right after its wait, say the same thing once. With several senders in flight
  // (LLP 0018) a request sent before the decrease may be accepted after it and another
  // refused: still the same episode until the decrease's wait is over.
  // @ref LLP 0016#controller
  if (!accepted_since_decrease_ || now < episode_until_) return;
  accepted_since_decrease_ = false;
  episode_until_ = now + wait;
  last_refusal_ = now;
  last_cut_shared_ = false;
  // Bytes first: the request lane's count decides whether there is anything to learn.
  Learn(bytes_, now, wait, ByteFloor());
  Learn(requests_, now, wait, policy_.min_requests_per_s);
}

// @ref LLP 0016#controller
void EndpointPacer::Learn(Lane& lane, MonotonicTime now, milliseconds wait, double floor) {
  const double span = Secs(now - lane.measure_from);
  if (!lane.learned) {
    // First refusal: what was accepted so far, spread over that time and the wait
    // ahead (a burst the server allowed says little about its rate); then slow start.
    // Refused before two acceptances (an outage, a single chunk), there is nothing to
    // measure: Retry-After and the ladder alone decide, as without a pacer.
    if (requests_.accepted_since_start < kMinAcceptedToLearn) return;
    const double sending = Secs(now - *first_);
    lane.learned = lane.accepted_since_start / std::max(sending + Secs(wait), 1.0);
    lane.slow_start = true;
  } else {
    double base = *lane.learned;
    const bool leaving = lane.slow_start;  // this refusal ends slow start
    // Driven by what was accepted since the last decrease: when the sender was slower
    // than the pace (the pacer did not bind), decrease from what it really sent.
    if (!leaving && span >= kMinMeasureSecs) {
      const double accepted_rate = lane.accepted_units / span;
      if (accepted_rate < kNotBindingRatio * base) base = accepted_rate;
    }
    // Refused again soon after a decrease that was not slow start's exit: that cut did
    // not get this sender under the limit, so cut deeper. @ref LLP 0016#repeat
    const bool repeat =
        !leaving && lane.cut_after_exit && lane.sending_since_cut < Secs(policy_.repeat_within);
    // The probe's reference: the rate refused, when it was refused after slow start;
    // slow start's own overshoot is no limit to return to, so after the exit it is a
    // margin above the rate the exit cut to. @ref LLP 0016#probe
    const double exit_rate = base * policy_.slow_start_decrease;
    lane.refused_rate = leaving ? policy_.probe_past_exit * exit_rate : base;
    lane.cut_after_exit = !leaving;
    lane.learned =
        leaving ? exit_rate : base * (repeat ? policy_.repeat_decrease : policy_.decrease);
    lane.slow_start = false;
  }
  lane.sending_since_cut = 0;
  lane.probe_from = -1;
  lane.learned = std::max(*lane.learned, floor);
  lane.rate_at_decrease = *lane.learned;
  lane.increase_from = now + wait;
  lane.measure_from = now + wait;
  lane.accepted_units = 0;
}

// The byte lane's floor is also the request floor in bytes (times the mean accepted
// request): else a byte rate cut to min_bytes_per_s paces 64 KiB requests at one per
// 16 s, far below min_requests_per_s, and a sender starved once stays starved.
// @ref LLP 0016#herd
double EndpointPacer::ByteFloor() const {
  return std::max(policy_.min_bytes_per_s, policy_.min_requests_per_s * UnitOf(bytes_));
}

// One request in the lane's units: 1 in the request lane; in the byte lane the mean
// accepted request (1 until something was accepted).
double EndpointPacer::UnitOf(const Lane& lane) const {
  if (&lane == &requests_ || requests_.accepted_total <= 0) return 1.0;
  return lane.accepted_total / requests_.accepted_total;
}

// Back from an outage (refused several times in a row, then accepted): one request per
// the last wait, in slow start. What was learned before the outage says nothing about
// how many others now return with it. @ref LLP 0016#herd
void EndpointPacer::Restart(Lane& lane, MonotonicTime now, double cost, double floor) {
  const double wait = std::max(Secs(last_wait_), 1e-3);
  lane.learned = std::max(cost / wait, floor);
  lane.slow_start = true;
  lane.rate_at_decrease = *lane.learned;
  lane.increase_from = now;
  lane.measure_from = now;
  lane.accepted_units = 0;
  lane.tat = now + FromSecs(cost / *lane.learned);
  lane.refused_rate = 0;
  lane.sending_since_cut = 0;
  lane.probe_from = -1;
}

void EndpointPacer::Increase(Lane& lane, MonotonicTime now) const {
  if (!lane.learned) return;
  if (now <= lane.increase_from) return;
  const double elapsed = Secs(now - lane.increase_from);
  if (lane.slow_start) {
    // Doubling (e + u) - u, u one request's share of every sender: the first estimate's
    // luck is diluted, not doubled along. @ref LLP 0016#fairness
    const double doubling = std::chrono::duration<double>(policy_.slow_start_doubling).count();
    const double growth = std::exp2(std::min(elapsed, kMaxIncreaseStep) / doubling);
    const double shared = policy_.slow_start_requests_per_s * UnitOf(lane);
    lane.learned = *lane.learned * growth + shared * (growth - 1);
  } else {
    const double unit = UnitOf(lane);
    const double step = std::max({policy_.increase_per_s * lane.rate_at_decrease,
                                  policy_.increase_requests_per_s * unit, SharedStep(lane)});
    // A silence counts as at most a second, but the pace's own interval between two
    // requests is sending, not silence: a sender paced at a small share (one request
    // every 5 s) must not rise five times slower per second than a large one.
    // @ref LLP 0016#herd
    const double interval = kPaceIntervalsCounted * unit / *lane.learned;
    const double counted = std::min(elapsed, std::max(kMaxIncreaseStep, interval));
    lane.learned = *lane.learned + Probe(lane, step, counted);
  }
  lane.increase_from = now;
}

// Returns what `counted` more seconds of sending add to the rate: `step` each second,
// and once probing, a step that doubles every probe_doubling of sending since the probe
// began, up to probe_max_factor x. @ref LLP 0016#probe
double EndpointPacer::Probe(Lane& lane, double step, double counted) const {
  const double t0 = lane.sending_since_cut, t1 = t0 + counted;
  lane.sending_since_cut = t1;
  const double d = Secs(policy_.probe_doubling);
  const double top = std::max(1.0, policy_.probe_max_factor);
  double add = step * counted;
  if (lane.probe_from >= 0 && d > 0) {
    // The integral of step x min(2^(x/d), top) over x = t - probe_from in [t0, t1].
    const double cap = std::log2(top) * d;
    auto integral = [&](double t) {
      const double x = t - lane.probe_from;
      if (x <= cap) return d / std::numbers::ln2 * std::exp2(x / d);
      return d / std::numbers::ln2 * top + (x - cap) * top;
    };
    add = step * (integral(t1) - integral(t0));
  } else if (lane.refused_rate > 0 && t1 >= Secs(policy_.probe_after) &&
             *lane.learned + add >= lane.refused_rate) {
    // Past the rate refused last, with nothing refused for probe_after: no limit holds
    // there any more, as far as this sender can tell.
    lane.probe_from = t1;
  }
  return add;
}

void EndpointPacer::Advertise(const AdvertisedQuota& q, MonotonicTime now) {
  if (!q.rate_per_s || !(*q.rate_per_s > 0)) return;
  Lane& lane = q.unit == QuotaUnit::kContentBytes ? bytes_ : requests_;
  lane.advertised = *q.rate_per_s;
  // The burst is what the schedule may hold, so no more than the horizon at the rate:
  // a schedule capped at the horizon under an uncapped burst would let a `remaining: 0`
  // (5,000 per minute, none left) send at once. @ref LLP 0023#rate-limit-remaining
  const double burst = q.burst ? static_cast<double>(*q.burst) : *q.rate_per_s;
  lane.advertised_burst = std::max(1.0, std::min(burst, *q.rate_per_s * kScheduleHorizonSecs));
  lane.advertised_at = now;
  if (q.remaining) {
    // The server's count now: the schedule allows exactly `remaining` more at once.
    double left = std::min(static_cast<double>(*q.remaining), lane.advertised_burst);
    if (q.bucket && policy_.share_others > 0) {
      // Leave room for share_room requests of somebody else: paced to the count exactly, a
      // lone sender keeps the bucket empty, and a newcomer's requests, refused, take nothing
      // it could ever see. @ref LLP 0016#shared-quota
      left -= std::min(policy_.share_room * UnitOf(lane), lane.advertised_burst / 2);
      left = std::max(0.0, left);
    }
    const MonotonicTime was = lane.tat;
    lane.tat = now + FromSecs((lane.advertised_burst - left) / *lane.advertised);
    // Fewer left than our reservations assumed (a newer `remaining: 0`, or others using
    // the quota): those not sent yet reserve again. @ref LLP 0016#recheck
    if (lane.tat > was) epoch_.fetch_add(1, std::memory_order_release);
  }
}

// Drops what a lane learned: no limit of its own until the next refusal.
void EndpointPacer::Unlearn(Lane& lane) {
  lane.learned.reset();
  lane.slow_start = false;
  lane.accepted_since_start = 0;
  lane.refused_rate = 0;
  lane.probe_from = -1;
}

void EndpointPacer::Forget(MonotonicTime now) {
  for (Lane* lane : {&requests_, &bytes_}) {
    if (lane->advertised && now - lane->advertised_at > policy_.forget_after) {
      lane->advertised.reset();
    }
    if (lane->learned && now - last_refusal_ > policy_.forget_after) {
      // @ref LLP 0016#controller — quiet for long enough: no limit, until refused again.
      Unlearn(*lane);
    }
  }
  if (!requests_.learned && !bytes_.learned && first_ && now - *first_ > policy_.forget_after) {
    // Nothing learned: the first estimate looks at the last minute at most.
    first_ = now;
    requests_.accepted_since_start = 0;
    bytes_.accepted_since_start = 0;
  }
}

bool EndpointPacer::NearLimit(MonotonicTime now, std::uint64_t wire_bytes) const {
  if (!policy_.enabled) return false;
  std::lock_guard lock(mu_);
  const double costs[2] = {1.0, static_cast<double>(wire_bytes)};
  const Lane* lanes[2] = {&requests_, &bytes_};
  for (int i = 0; i < 2; ++i) {
    const auto rate = lanes[i]->Rate();
    if (!rate) continue;
    // As Reserve() decides: a request now would start this many seconds late.
    const double tolerance = std::max(lanes[i]->Tolerance(), costs[i]) / *rate;
    if (Secs(lanes[i]->tat - now) + costs[i] / *rate - tolerance > 0) return true;
  }
  return false;
}

PaceRate EndpointPacer::Current(MonotonicTime now) const {
  std::lock_guard lock(mu_);
  (void)now;
  PaceRate r;
  const bool advertised = requests_.advertised || bytes_.advertised;
  const bool learned = requests_.learned || bytes_.learned;
  r.source = advertised ? PaceSource::kAdvertised
             : learned  ? PaceSource::kLearned
                        : PaceSource::kNone;
  r.requests_per_s = requests_.Rate().value_or(0);
  r.bytes_per_s = bytes_.Rate().value_or(0);
  if (bytes_.advertised) r.burst_bytes = static_cast<std::uint64_t>(bytes_.advertised_burst);
  return r;
}

}  // namespace fwdsink
