// SPDX-License-Identifier: Apache-2.0
// The driver's spool upkeep: folders repaired, refused entries quarantined, a changed
// partition kept at hand-over, dead letters over their caps purged. @ref LLP 0023
#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "driver/driver_impl.h"
#include "driver/long_row.h"
#include "engine/resolve_deps.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"

namespace fwdsink {

void Driver::Impl::RepairFolders(TickReport& report) {
  auto made = spool.EnsureFolders();
  if (!made) return SpoolError({}, "repair", made.status().message(), &report);
  for (const auto& folder : *made) {
    counters.spool_repairs.fetch_add(1, std::memory_order_relaxed);
    Emit({.name = events::kDriverSpoolRepaired,
          .reason = "folder_missing",
          .message = "spool folder " + folder.string() + " had vanished; recreated"});
  }
}

// Symlinks, hard links, FIFOs, devices and bad names are never sent: each is moved
// to quarantine/ and reported once. @ref LLP 0023#spool
void Driver::Impl::QuarantineRefused(const std::vector<RefusedEntry>& refused, TickReport& report) {
  for (const RefusedEntry& e : refused) {
    // The name is not ours to trust: shown through the JSON writer (invalid UTF-8
    // replaced), never used as a partition name.
    auto moved = spool.Quarantine(e);
    if (!moved) {
      report.errors += 1;  // it is still there: the pass is not clean
      if (!unmovable.insert(e.file).second) continue;
      SpoolError({}, "quarantine",
                 "ready/" + e.file + ": " + e.detail + "; " + moved.status().message(), nullptr);
      continue;
    }
    report.quarantined += 1;
    counters.quarantined.fetch_add(1, std::memory_order_relaxed);
    Emit({.name = events::kDriverQuarantine,
          .reason = e.reason,
          .message = "ready/" + e.file + ": " + e.detail + "; moved to " + moved->string()});
  }
}

// Before a delivered partition is removed: is it still the file that was sent? A file
// that grew keeps its new rows (the cursor goes to what was sent, the next tick sends
// the rest); one rewritten in place goes to quarantine/. Never unlinks unsent rows.
// @ref LLP 0023#handover
bool Driver::Impl::HandOverChanged(const ReadyPartition& p, const ForwardResult& r,
                                   TickReport& report) {
  auto now = spool.PartitionState(p.name);
  if (!now) return false;  // gone or unreadable: MarkDelivered reports it
  if (now->size == r.file_size && now->mtime_ns == r.file_mtime_ns) return false;
  counters.handover_changed.fetch_add(1, std::memory_order_relaxed);
  const bool grew = now->size > r.file_size;
  std::string message = "partition changed after hand-over (" + std::to_string(r.file_size) +
                        " bytes sent, " + std::to_string(now->size) + " now)";
  if (grew) {
    if (Status s = spool.SaveCursor(p.name, r.resume_offset); !s.ok()) {
      SpoolError(p.name, "cursor_save", s.message(), &report);
      return true;
    }
    message += "; kept, the rest is sent next";
    report.respooled += 1;
  } else {
    auto moved = spool.Quarantine({p.name + ".ndjson", "changed", message});
    message += moved ? "; moved to " + moved->string() : "; kept: " + moved.status().message();
    report.quarantined += 1;
  }
  Emit({.name = events::kDriverHandoverChanged,
        .partition = p.name,
        .reason = grew ? "grew" : "changed",
        .begin = r.file_size,
        .end = now->size,
        .message = std::move(message)});
  return true;
}

void Driver::Impl::PurgeDeadOverCaps() {
  if (!options.dead_caps.any()) return;
  auto purged = EnforceDeadCaps(spool, options.dead_caps, deps.time->SystemNow());
  if (!purged) return SpoolError({}, "dead_purge", purged.status().message(), nullptr);
  for (const PurgedDeadLetter& p : *purged) {
    counters.dead_purged.fetch_add(1, std::memory_order_relaxed);
    counters.dead_purged_bytes.fetch_add(p.bytes, std::memory_order_relaxed);
    const auto age =
        std::chrono::duration_cast<std::chrono::seconds>(deps.time->SystemNow() - p.entry.dead_at);
    Emit({.name = events::kDriverDeadPurged,
          .partition = p.entry.partition,
          .reason = std::string(p.cap),
          .begin = p.entry.begin,
          .end = p.entry.end,
          .message = "deleted dead letter " + p.entry.name + " (" + std::to_string(p.bytes) +
                     " bytes, dead " + std::to_string(age.count()) + " s ago) under " +
                     std::string(p.cap)});
  }
}

}  // namespace fwdsink
