#include "cursor_writer.h"

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
