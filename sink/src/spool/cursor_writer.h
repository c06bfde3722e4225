// SPDX-License-Identifier: Apache-2.0
// Persists forward cursors and their journals off the sending thread: the CursorLog the
// driver hands each of its sinks. Internal to the library.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fwdsink/cursor.h"
#include "fwdsink/cursor_log.h"
#include "fwdsink/status.h"
#include "io/single_slot_worker.h"

namespace fwdsink {

class Spool;  // fwdsink/spool.h

// Saves cursor records (the offset and the journal of ranges in flight) on a worker
// thread, grouped: Submit() returns at once, one save is in flight at most, and the
// states submitted while it runs are written by the next save together, the newest
// state of each partition replacing the older ones (the newest is always a correct
// one: it holds every range opened so far). So acks cost fewer fsyncs than acks under
// load, and the cursor on disk is never ahead of what the server acknowledged (or what
// went durably to dead letters). How far it may lag is bounded by the journal, not by
// the writer: the sender makes each refill's journal durable (Submit + Sync) before the
// first byte of a new range leaves, so a crash re-sends the journaled unacknowledged
// ranges only, under their keys: at most `window` chunks per partition plus the pieces
// they were split into. @ref LLP 0023#crash-bound As the sink's CursorLog (Journal(),
// Acked()) it is the only route by which a cursor moves forward while forwarding: the
// sink calls it directly, not through the driver. @ref LLP 0021#async-cursor
// @ref LLP 0021#cursor-road
//
// Threads: every method may be called from any thread (state guarded by mu_); the
// driver gives each sender its own writer. The spool is touched by the worker only
// between a Submit() and the Sync()/WaitIdle()/Flush() that follows it, so the sender
// must wait before any other use of the spool for a partition it submitted. The spool
// must outlive the writer (not owned).
class CursorWriter final : public CursorLog {
 public:
  explicit CursorWriter(Spool& spool) : spool_(spool) {}
  // For tests: `before_save` runs on the worker before each record is written (a slow
  // or blocked disk).
  CursorWriter(Spool& spool, std::function<void()> before_save)
      : spool_(spool), before_save_(std::move(before_save)) {}
  ~CursorWriter() override = default;  // the worker (declared last) saves what is queued
  CursorWriter(const CursorWriter&) = delete;
  CursorWriter& operator=(const CursorWriter&) = delete;

  // Queues `offset` and the journal `ranges` (Spool::SaveCursor's rules) as partition
  // `name`'s state and returns without waiting; a state of the same partition queued
  // and not yet being written is replaced. Returns false (nothing queued) if an earlier
  // save failed: the caller must stop sending (the error is kept for Flush).
  [[nodiscard]] bool Submit(const std::string& name, std::uint64_t offset,
                            std::vector<CursorRange> ranges = {});
  // Waits until every submitted state is on disk (or failed). Returns false if a save
  // failed since the last Flush (the error is kept for Flush). The journal-before-
  // sending rule: Submit(journal) + Sync() before the first byte of a new range leaves.
  [[nodiscard]] bool Sync();
  // Waits until every submitted state is on disk (or failed), keeping any error.
  void WaitIdle() { worker_.WaitIdle(); }
  // Waits like WaitIdle(), then returns the first error since the last Flush, or an ok
  // status, and clears it.
  [[nodiscard]] Status Flush();
  // CursorLog: Submit(state) + Sync(), the journal-before-sending rule.
  [[nodiscard]] bool Journal(const JournalState& state) override;
  // CursorLog: Submit()s the chunk's cursor and journal, without waiting. The final
  // chunk's ack writes nothing: the partition is delivered, and the driver's
  // Spool::MarkDelivered removes its cursor with it.
  [[nodiscard]] bool Acked(const AckedChunk& chunk) override;
  // Returns the number of records written so far (one temp write and fsync each),
  // failed ones included: saves per ack, for benchmarks.
  [[nodiscard]] std::uint64_t saves() const { return saves_.load(); }

 private:
  struct State {
    std::uint64_t offset = 0;
    std::vector<CursorRange> ranges;
  };
  void SavePending();  // on the worker: writes every queued state

  Spool& spool_;                       // Not owned.
  std::function<void()> before_save_;  // immutable
  std::mutex mu_;
  Status error_;                         // guarded by mu_
  std::map<std::string, State> queued_;  // guarded by mu_: the newest state per partition
  std::atomic<std::uint64_t> saves_{0};
  // On the process's file threads. @ref LLP 0014#threads
  SingleSlotWorker worker_{JobThreads::ForFiles()};  // last: idle before the rest goes
};

}  // namespace fwdsink
