// SPDX-License-Identifier: Apache-2.0
// The driver's packs: the choice of small ready partitions to send together, the
// manifest made durable before a pack is sent, the manifests of an earlier run settled
// before anything else, and the members' delivery after the acknowledgement, in an
// order where a crash at any point either finishes it or re-sends the same pack under
// the same key. @ref LLP 0027
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <unordered_set>

#include "driver/driver_impl.h"
#include "driver/packs.h"
#include "spool/spool_io.h"

namespace fwdsink {
namespace internal {

namespace {

std::size_t MemberKeyBytes(const ReadyPartition& p) {
  return p.name.size() + 3 + std::to_string(p.size).size();  // "<name>:0-<size>"
}

// The field lines a run's member keys fill, as MembersHeaderLines cuts them.
struct HeaderFill {
  std::size_t lines = 0;
  std::size_t line = 0;  // bytes on the last line
  // Adds a key of `bytes` if the keys still fit `limits`; false (unchanged) if not.
  bool Add(std::size_t bytes, const PackLimits& limits) {
    if (lines > 0 && line + 2 + bytes <= limits.max_header_bytes) {
      line += 2 + bytes;  // ", <key>"
      return true;
    }
    if (lines + 1 > limits.max_header_lines) return false;
    ++lines;
    line = bytes;
    return true;
  }
};

}  // namespace

// @ref LLP 0027#choice
std::vector<PackItem> ChoosePacks(const std::vector<ReadyPartition>& ready,
                                  const std::vector<bool>& packable, const PackLimits& limits) {
  std::vector<PackItem> items;
  PackItem run;
  std::uint64_t bytes = 0;
  HeaderFill header;
  const auto close = [&](bool open) {
    if (run.members.empty()) return;
    run.pack = run.members.size() > 1;
    run.open = open;
    items.push_back(std::move(run));
    run = {};
    bytes = 0;
    header = {};
  };
  for (std::size_t i = 0; i < ready.size(); ++i) {
    if (!packable[i]) {
      close(false);
      items.push_back({.members = {i}});
      continue;
    }
    const std::size_t key_bytes = MemberKeyBytes(ready[i]);
    HeaderFill with = header;
    const bool fits = with.Add(key_bytes, limits) && bytes + ready[i].size <= limits.max_bytes;
    if (!run.members.empty() && !fits) {
      close(false);
      with = {};
      with.Add(key_bytes, limits);  // the first key of a run
    }
    run.members.push_back(i);
    bytes += ready[i].size;
    header = with;
  }
  close(true);
  return items;
}

}  // namespace internal

namespace {

std::vector<PackMember> MembersOf(const Spool& spool, const PackManifest& m) {
  std::vector<PackMember> out;
  for (const ManifestMember& x : m.members) {
    out.push_back({x.name, spool.PartitionPath(x.name), x.size, x.mtime_ns});
  }
  return out;
}

// A member as a partition of its own.
ReadyPartition Alone(const Spool& spool, const ManifestMember& x) {
  return {.name = x.name, .path = spool.PartitionPath(x.name), .size = x.size};
}

}  // namespace

// @ref LLP 0027#resume
bool Driver::Impl::ResumePacks(TickReport& report) {
  pack_settled.clear();
  auto scan = ListPackManifests(spool.dir());
  if (!scan) {
    SpoolError({}, "pack_manifest", scan.status().message(), &report);
    return false;
  }
  for (const BadManifest& bad : scan->bad) {
    // Not ours to trust: set aside where an operator sees it; its members go on.
    const std::filesystem::path to =
        spool.quarantine_dir() / ("pack-" + bad.path.filename().string());
    std::error_code ec;
    std::filesystem::create_directories(spool.quarantine_dir(), ec);
    std::filesystem::rename(bad.path, to, ec);
    SpoolError({}, "pack_manifest",
               bad.message + (ec ? "; kept: " + ec.message() : "; moved to " + to.string()),
               &report);
  }
  if (scan->manifests.empty()) return true;
  Sender& sender = senders.front();
  if (!sender.slot->AcquireOwn()) {
    report.aborted = true;
    return false;
  }
  bool settled = true;
  for (PackManifest& m : scan->manifests) {
    for (const ManifestMember& x : m.members) pack_settled.insert(x.name);
    report.partitions += m.members.size();
    if (!m.acked) {
      Emit({.name = events::kDriverPackResumed,
            .partition = m.members.front().name,
            .key = m.key,
            .end = m.members.size(),
            .message = "pack " + m.key + " of " + std::to_string(m.members.size()) +
                       " partitions was not acknowledged; sent again unchanged"});
    }
    if (!RunPack(sender, std::move(m), report) || stop_tick.load()) {
      settled = false;
      break;
    }
  }
  sender.slot->ReleaseOwn();
  return settled;
}

namespace {

// The choice of one tick: packs of members as they are now (stat), and the partitions to
// send alone; a run pack_linger holds back is in neither.
struct Chosen {
  std::vector<std::vector<ManifestMember>> packs;
  std::vector<ReadyPartition> alone;
};

Chosen Choose(const Spool& spool, const DriverOptions& options, const std::set<std::string>& alone,
              std::int64_t now_ns, const std::vector<ReadyPartition>& ready) {
  const std::uint64_t chunk = options.forward.chunker.chunk_bytes;
  const std::uint64_t below = options.pack_below.value_or(chunk / 2);
  // One listing of state/ for the tick, not a failed open per small partition (LLP
  // 0027#figures); should the listing fail, each partition is asked.
  const Result<std::unordered_set<std::string>> cursors = spool.CursorNames();
  const auto has_cursor = [&](const std::string& name) {
    if (!cursors.ok()) return spool.LoadCursor(name).status != CursorStatus::kMissing;
    return cursors->contains(name);
  };
  std::vector<bool> packable(ready.size(), false);
  for (std::size_t i = 0; i < ready.size(); ++i) {
    const ReadyPartition& p = ready[i];
    // A partition with a cursor (partly sent, or failing alone) is sent as before.
    packable[i] = p.size > 0 && p.size < below && !alone.contains(p.name) && !has_cursor(p.name);
  }
  const auto items = internal::ChoosePacks(ready, packable,
                                           {.max_bytes = chunk,
                                            .max_header_bytes = kMaxMembersHeaderBytes,
                                            .max_header_lines = kMaxMembersHeaderLines});
  Chosen out;
  for (const internal::PackItem& item : items) {
    std::vector<ManifestMember> members;
    // As the tick's scan saw them (lstat): a member changed since is caught when the
    // pack is read (LLP 0027#changed).
    for (std::size_t i : item.members) {
      members.push_back({ready[i].name, ready[i].size, ready[i].mtime_ns});
    }
    // pack_linger: a run that more small partitions may still join waits for them.
    const bool young =
        !members.empty() && options.pack_linger.count() > 0 &&
        now_ns - members.front().mtime_ns < std::chrono::nanoseconds(options.pack_linger).count();
    if (item.open && young) continue;
    if (!item.pack || members.size() < 2) {
      for (std::size_t i : item.members) out.alone.push_back(ready[i]);
      continue;
    }
    out.packs.push_back(std::move(members));
  }
  return out;
}

}  // namespace

std::vector<ReadyPartition> Driver::Impl::SendPacks(const std::vector<ReadyPartition>& scanned,
                                                    TickReport& report) {
  // What ResumePacks settled is no longer the scan's.
  std::vector<ReadyPartition> ready;
  for (const ReadyPartition& p : scanned) {
    if (!pack_settled.contains(p.name)) ready.push_back(p);
  }
  // --pack-below 0: every partition alone, as before.
  if (options.pack_below == std::optional<std::uint64_t>(0)) return ready;
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          deps.time->SystemNow().time_since_epoch())
                          .count();
  Chosen chosen = Choose(spool, options, pack_alone, now_ns, ready);
  if (chosen.packs.empty()) return std::move(chosen.alone);
  // Several packs in flight, one a sender, as many as the limit lets: a pack is one
  // request, and its read, manifest and delivery (the members' unlinks and fsyncs) are
  // a sender's own work that overlaps another's request. @ref LLP 0027#parallel
  HandOut(
      chosen.packs.size(),
      [this, &chosen](Sender& sender, std::size_t i, TickReport& mine) {
        mine.partitions += chosen.packs[i].size();
        PackManifest m = MakeManifest(std::move(chosen.packs[i]));
        // Durable before the first byte leaves. @ref LLP 0027#manifest
        if (Status s = WriteManifest(spool.dir(), m); !s.ok()) {
          SpoolError(m.members.front().name, "pack_manifest", s.message(), &mine);
          stop_tick.store(true);
          return;
        }
        (void)RunPack(sender, std::move(m), mine);
      },
      report);
  // An endpoint-wide stop (auth, TLS, config, Close) ends the tick here.
  if (stop_tick.load() || report.aborted) return {};
  return std::move(chosen.alone);
}

bool Driver::Impl::RunPack(Sender& sender, PackManifest m, TickReport& report) {
  for (;;) {
    if (m.acked) return DeliverPack(m, report);  // a crash after the ack: finish
    const PackResult sent = sender.sink->ForwardPack(m.key, MembersOf(spool, m));
    const ForwardResult& r = sent.result;
    AddAcked(report, r);
    if (sent.bad_member) {
      const ManifestMember bad = m.members[*sent.bad_member];
      auto rest = ResolvePack(m, *sent.bad_member, sent.bad_reason, report);
      if (!rest) return false;
      if (sent.bad_reason == "torn" || sent.bad_reason == "grew") {
        // Alone in this pass, not the next: a torn member's whole lines go now and its
        // tail to dead/, so `--once` says 65 in the pass that found it (issue 38).
        // @ref LLP 0027#changed
        report.partitions -= std::min<std::uint64_t>(report.partitions, 1);
        ForwardOne(sender, Alone(spool, bad), report);
        if (stop_tick.load()) return false;
      }
      if (rest->members.empty()) return true;
      m = std::move(*rest);
      continue;
    }
    if (sent.unpack) return UnpackAlone(sender, m, report);
    {
      std::lock_guard guard(report_mu);
      pass_errors.Note(r);
    }
    switch (r.outcome) {
      case Outcome::kDelivered: return DeliverPack(m, report);
      case Outcome::kRespooled:
        // The manifest stays: the next tick sends the same pack first.
        report.respooled += 1;
        counters.respools.fetch_add(1, std::memory_order_relaxed);
        PackFailed(m, r, report);
        return false;
      case Outcome::kPartitionError:  // the pack could not be encoded: the tick stops
        report.errors += 1;
        stop_tick.store(true);
        return false;
      default:  // aborted, auth, TLS, config: endpoint-wide, as for a partition
        Conclude(Alone(spool, m.members.front()), r, report);
        return false;
    }
  }
}

// The horizon of a pack: its failures are recorded on its first member's cursor record
// (a member has no other), and once the first is older than the horizon every member goes
// to dead/ whole, the first one last so that a crash in between keeps the record, then the
// manifest (a member already gone is resolved away by the next tick). @ref LLP 0027#horizon
void Driver::Impl::PackFailed(const PackManifest& m, const ForwardResult& r, TickReport& report) {
  const auto now = deps.time->SystemNow();
  const std::string& first = m.members.front().name;
  if (!spool.RecordFailure(first, now).ok()) {
    counters.spool_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const CursorState c = spool.LoadCursor(first);
  if (!c.first_failure || now - *c.first_failure <= options.horizon) return;
  for (auto x = m.members.rbegin(); x != m.members.rend(); ++x) {
    // A member has no journal (it had no cursor when it was packed).
    if (!GiveUp(x->name, 0, {}, r, report)) return;  // the manifest stays for the next tick
  }
  if (Status s = RemoveManifest(spool.dir(), m); !s.ok()) {
    SpoolError(first, "pack_manifest", s.message(), &report);
  }
}

// After the ack: the manifest is marked acknowledged, the members go (one fsync of
// ready/ for all), the manifest goes. A crash before the mark re-sends the same pack
// under its key; after it, the next start only finishes the removals.
// @ref LLP 0027#delivery
bool Driver::Impl::DeliverPack(PackManifest& m, TickReport& report) {
  if (!m.acked) {
    if (Status s = MarkManifestAcked(spool.dir(), m); !s.ok()) {
      SpoolError(m.members.front().name, "pack_manifest", s.message(), &report);
      stop_tick.store(true);
      return false;
    }
  }
  for (const ManifestMember& x : m.members) {
    auto now = spool.PartitionState(x.name);
    if (!now) continue;  // removed before a crash
    if (now->size != x.size || now->mtime_ns != x.mtime_ns) {
      // Changed after it was read: its new bytes were never sent. @ref LLP 0023#handover
      ForwardResult as_sent;
      as_sent.resume_offset = as_sent.file_size = x.size;
      as_sent.file_mtime_ns = x.mtime_ns;
      (void)HandOverChanged(Alone(spool, x), as_sent, report);
      continue;
    }
    if (&x == &m.members.front() && spool.LoadCursor(x.name).status != CursorStatus::kMissing) {
      // The record of the pack's failures (PackFailed) goes with its partition.
      if (Status s = spool.MarkDelivered(x.name); !s.ok()) {
        SpoolError(x.name, "mark_delivered", s.message(), nullptr);
        continue;
      }
    } else {
      std::error_code ec;
      std::filesystem::remove(spool.PartitionPath(x.name), ec);
      if (ec) {
        SpoolError(x.name, "mark_delivered",
                   spool_io::IoError("cannot remove", x.name, ec).message(), nullptr);
        continue;
      }
    }
    report.delivered += 1;
    counters.partitions_delivered.fetch_add(1, std::memory_order_relaxed);
  }
  Status synced = spool_io::FsyncDir(spool.ready_dir());
  if (synced.ok()) synced = RemoveManifest(spool.dir(), m);
  if (!synced.ok()) {
    SpoolError(m.members.front().name, "pack_manifest", synced.message(), &report);
    return false;
  }
  return true;
}

// A member not as its manifest says: changed ones go to quarantine/, grown and torn
// ones are sent alone (LLP 0023#handover keeps appended rows), gone ones are gone; the rest is a
// new pack under a new key, written before the old manifest goes (a crash in between resolves the
// old one again to the same new one). @ref LLP 0027#changed
std::optional<PackManifest> Driver::Impl::ResolvePack(const PackManifest& m, std::size_t bad,
                                                      const std::string& reason,
                                                      TickReport& report) {
  const std::string name = m.members[bad].name;
  std::string message = "pack " + m.key + ": member " + name + " is " + reason;
  if (reason == "changed") {
    auto moved = spool.Quarantine(
        {name + ".ndjson", "changed", "partition changed after its pack manifest was written"});
    if (!moved) {
      SpoolError(name, "quarantine", moved.status().message(), &report);
      stop_tick.store(true);
      return std::nullopt;
    }
    message += "; moved to " + moved->string();
    counters.handover_changed.fetch_add(1, std::memory_order_relaxed);
    report.quarantined += 1;
  } else if (reason == "torn" || reason == "grew") {
    SendAlone(name);
    message += "; sent alone";
  }
  std::vector<ManifestMember> rest = m.members;
  rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(bad));
  PackManifest next = rest.empty() ? PackManifest{} : MakeManifest(std::move(rest));
  Status s = next.members.empty() ? OkStatus() : WriteManifest(spool.dir(), next);
  if (s.ok()) s = RemoveManifest(spool.dir(), m);
  if (!s.ok()) {
    SpoolError(name, "pack_manifest", s.message(), &report);
    stop_tick.store(true);
    return std::nullopt;
  }
  message += next.members.empty()
                 ? "; no member left"
                 : "; the other " + std::to_string(next.members.size()) + " go under " + next.key;
  Emit({.name = events::kDriverPackResolved,
        .partition = name,
        .key = next.key,
        .reason = reason,
        .end = next.members.size(),
        .message = std::move(message)});
  return next;
}

// The server refused the pack's data and stored none of it: the manifest goes, and each
// member is sent alone now (a 413 splits it by rows, a bad row is dead-lettered in its
// own partition). A crash in between packs them again the same way. @ref LLP 0027#refusals
bool Driver::Impl::UnpackAlone(Sender& sender, const PackManifest& m, TickReport& report) {
  if (Status s = RemoveManifest(spool.dir(), m); !s.ok()) {
    SpoolError(m.members.front().name, "pack_manifest", s.message(), &report);
    stop_tick.store(true);
    return false;
  }
  report.partitions -= std::min<std::uint64_t>(report.partitions, m.members.size());
  for (const ManifestMember& x : m.members) {
    SendAlone(x.name);
    if (stop_tick.load()) break;
    ForwardOne(sender,
               ReadyPartition{.name = x.name, .path = spool.PartitionPath(x.name), .size = x.size},
               report);
  }
  return true;
}

}  // namespace fwdsink
