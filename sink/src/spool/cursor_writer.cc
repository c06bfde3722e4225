// SPDX-License-Identifier: Apache-2.0
#include "spool/cursor_writer.h"

#include <utility>

#include "fwdsink/spool.h"

namespace fwdsink {

bool CursorWriter::Submit(const std::string& name, std::uint64_t offset,
                          std::vector<CursorRange> ranges) {
  {
    std::lock_guard lock(mu_);
    if (!error_.ok()) return false;
    // Grouped saves: a state queued while a save runs replaces the one queued before
    // it, and the next save writes only the newest. Before the journal the writer had
    // to wait for the save in flight instead (coalescing let ~27 acks pass during one
    // slow fsync, and a SIGKILL re-sent all of them); now the lag costs nothing after a
    // crash, because every range the newest state may still owe was journaled before
    // it was sent. @ref LLP 0021#async-cursor @ref LLP 0023#crash-bound
    queued_[name] = State{offset, std::move(ranges)};
  }
  // A job still waiting in the slot is replaced by this one, which does the same.
  worker_.Post([this] { SavePending(); });
  return true;
}

void CursorWriter::SavePending() {
  std::map<std::string, State> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(queued_);
  }
  for (const auto& [name, state] : batch) {
    if (before_save_) before_save_();
    Status saved = spool_.SaveCursor(name, state.offset, state.ranges);
    saves_.fetch_add(1);
    std::lock_guard lock(mu_);
    if (!saved.ok() && error_.ok()) error_ = std::move(saved);
  }
}

bool CursorWriter::Journal(const JournalState& state) {
  // Before the first byte of ranges a restart could not cut again by itself: durable.
  // @ref LLP 0014#journal
  return Submit(std::string(state.partition), state.cursor,
                std::vector<CursorRange>(state.ranges.begin(), state.ranges.end())) &&
         Sync();
}

bool CursorWriter::Acked(const AckedChunk& chunk) {
  // The final chunk's cursor would be deleted by MarkDelivered a moment later; a crash
  // in between re-sends that one chunk under the same key. @ref LLP 0021#async-cursor
  if (chunk.final) return true;
  // The cursor is the contiguous prefix of whole chunks (never inside a split chunk,
  // never past a gap); the journal says what lies past it: the pieces owed, re-sent
  // exactly after a crash, and those acknowledged past a gap, never re-sent.
  // @ref LLP 0023#split-window @ref LLP 0014#window
  return Submit(std::string(chunk.partition), chunk.cursor,
                std::vector<CursorRange>(chunk.journal.begin(), chunk.journal.end()));
}

bool CursorWriter::Sync() {
  worker_.WaitIdle();
  std::lock_guard lock(mu_);
  return error_.ok();
}

Status CursorWriter::Flush() {
  worker_.WaitIdle();
  std::lock_guard lock(mu_);
  Status out = std::move(error_);
  error_ = Status{};
  return out;
}

}  // namespace fwdsink
