// SPDX-License-Identifier: Apache-2.0
// Persists forward cursors off the sending thread. Internal to the driver.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "fwdsink/spool.h"
#include "io/single_slot_worker.h"

namespace fwdsink {

// Saves cursors on a worker thread, so the temp-write/fsync/rename/fsync of chunk N's
// cursor overlaps the request for chunk N+1 instead of adding to it. The cursor on
// disk is never ahead of what the server acknowledged (or what went durably to dead
// letters); it lags by the one save in flight at most, which a crash turns into one
// more re-sent chunk under the same key (two in all). @ref LLP 0023#crash-bound It is the only
// route by which the driver moves a cursor forward while forwarding. @ref LLP 0021#async-cursor
//
// Threads: Submit(), WaitIdle() and Flush() are called by one sender thread (the driver
// gives each sender its own writer, as it holds one partition at a time: a writer only
// ever saves one partition's cursor between two Flush() calls. @ref LLP 0018#cursors);
// the spool is touched by the worker only between a Submit() and the WaitIdle()/Flush()
// that follows it, so the sender must wait before any other use of the spool for that
// partition. The spool must outlive the writer (not owned).
class CursorWriter {
 public:
  explicit CursorWriter(Spool& spool) : spool_(spool) {}
  ~CursorWriter() = default;  // the worker (declared last) saves what is queued, then stops
  CursorWriter(const CursorWriter&) = delete;
  CursorWriter& operator=(const CursorWriter&) = delete;

  // Waits for the save in flight (if any) to land, then queues `offset` as partition
  // `name`'s cursor. Returns false if an earlier save failed: the caller must stop
  // sending (the error is kept for Flush).
  [[nodiscard]] bool Submit(const std::string& name, std::uint64_t offset);
  // Waits until every submitted cursor is on disk (or failed), keeping any error.
  void WaitIdle() { worker_.WaitIdle(); }
  // Waits like WaitIdle(), then returns the first error since the last Flush, or an ok
  // status, and clears it.
  [[nodiscard]] Status Flush();

 private:
  Spool& spool_;  // Not owned.
  std::mutex mu_;
  Status error_;             // guarded by mu_
  SingleSlotWorker worker_;  // last: destroyed (and joined) before the rest
};

}  // namespace fwdsink
