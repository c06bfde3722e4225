// Persists forward cursors off the sending thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fwdsink/spool.h"

namespace fwdsink {

// Saves cursors on a thread of its own, so the temp-write/fsync/rename/fsync of chunk
// N's cursor overlaps the request for chunk N+1 instead of adding to it. The cursor on
// disk is never ahead of what the server acknowledged; it may lag by the one save in
// flight, which a crash turns into one more re-sent chunk under the same key.
// @ref LLP 0021#async-cursor
//
// Threads: Submit() and Flush() are called by the driver thread; the spool is touched
// by the writer thread only between a Submit() and the Flush() that follows it, so the
// driver must Flush() before any other use of the spool. Thread-safe otherwise
// (state guarded by mu_).
class CursorWriter {
 public:
  explicit CursorWriter(Spool& spool);
  ~CursorWriter();  // waits for the save in flight, then stops
  CursorWriter(const CursorWriter&) = delete;
  CursorWriter& operator=(const CursorWriter&) = delete;

  // Queues `offset` as partition `name`'s cursor; a later Submit for the same
  // partition replaces a queued one (only the newest matters). Returns false if an
  // earlier save failed: the caller must stop sending (the error is kept for Flush).
  [[nodiscard]] bool Submit(const std::string& name, std::uint64_t offset);
  // Waits until every submitted cursor is on disk (or failed), keeping any error.
  void WaitIdle();
  // Waits like WaitIdle(), then returns the first error since the last Flush, or an ok
  // status, and clears it.
  [[nodiscard]] Status Flush();

 private:
  void Loop();

  Spool& spool_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::pair<std::string, std::uint64_t>> queued_;  // guarded by mu_
  bool busy_ = false;                                            // guarded by mu_
  bool stopping_ = false;                                        // guarded by mu_
  Status error_;                                            // guarded by mu_
  std::thread thread_;  // last: starts after everything above is initialised
};

}  // namespace fwdsink
