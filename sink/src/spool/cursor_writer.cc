// SPDX-License-Identifier: Apache-2.0
#include "spool/cursor_writer.h"

#include <utility>

namespace fwdsink {

bool CursorWriter::Submit(const std::string& name, std::uint64_t offset) {
  // One save in flight at most: the previous one (which overlapped the request of the
  // chunk just acknowledged) lands first. So the disk lags by two acknowledged chunks
  // at most, whatever the disk's speed, and a crash re-sends at most two chunks with
  // the same keys. Coalescing queued saves instead let a slow disk fall behind without
  // bound. @ref LLP 0023#crash-bound
  worker_.WaitIdle();
  {
    std::lock_guard lock(mu_);
    if (!error_.ok()) return false;
  }
  // A different partition's pending save is never replaced: the driver flushes
  // between partitions, so the slot only coalesces saves of the same partition.
  // Wait for the previous save first: with coalescing alone, one slow fsync (ClickHouse
  // fsyncing its parts on the same disk) let ~27 acks pass while the cursor on disk
  // stayed put, and a SIGKILL re-sent all of them. Now the disk is at most two chunks
  // behind, as LLP 0021 promises; the wait is free while a save is faster than a send.
  // @ref LLP 0021#async-cursor
  worker_.WaitIdle();
  worker_.Post([this, name, offset] {
    Status saved = spool_.SaveCursor(name, offset);
    std::lock_guard lock(mu_);
    if (!saved.ok() && error_.ok()) error_ = std::move(saved);
  });
  return true;
}

Status CursorWriter::Flush() {
  worker_.WaitIdle();
  std::lock_guard lock(mu_);
  Status out = std::move(error_);
  error_ = Status{};
  return out;
}

}  // namespace fwdsink
