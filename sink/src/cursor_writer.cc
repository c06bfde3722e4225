#include "cursor_writer.h"

#include <utility>

namespace fwdsink {

bool CursorWriter::Submit(const std::string& name, std::uint64_t offset) {
  {
    std::lock_guard lock(mu_);
    if (!error_.ok()) return false;
  }
  // A different partition's pending save is never replaced: the driver flushes
  // between partitions, so the slot only coalesces saves of the same partition.
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
