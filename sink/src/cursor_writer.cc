#include "fwdsink/cursor_writer.h"

namespace fwdsink {

CursorWriter::CursorWriter(Spool& spool) : spool_(spool), thread_([this] { Loop(); }) {}

CursorWriter::~CursorWriter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool CursorWriter::Submit(const std::string& name, std::uint64_t offset) {
  std::lock_guard lock(mu_);
  if (!error_.ok()) return false;
  // A different partition's pending save is never replaced: the driver flushes
  // between partitions, so this only coalesces saves of the same partition.
  queued_ = {name, offset};
  cv_.notify_all();
  return true;
}

void CursorWriter::WaitIdle() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !queued_ && !busy_; });
}

Status CursorWriter::Flush() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !queued_ && !busy_; });
  Status out = std::move(error_);
  error_ = Status();
  return out;
}

void CursorWriter::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return queued_.has_value() || stopping_; });
    if (!queued_) return;  // stopping with nothing left to save
    auto [name, offset] = std::move(*queued_);
    queued_.reset();
    busy_ = true;
    lock.unlock();
    Status s = spool_.SaveCursor(name, offset);
    lock.lock();
    busy_ = false;
    if (!s.ok() && error_.ok()) error_ = std::move(s);
    cv_.notify_all();
  }
}

}  // namespace fwdsink
