// SPDX-License-Identifier: Apache-2.0
#include "engine/cursor_window.h"

#include <algorithm>

namespace fwdsink {

bool CursorWindow::Open(std::uint64_t begin, std::uint64_t end) {
  if (begin >= end || begin < base_) return false;
  if (Find(begin, end)) return true;  // a part of a range open already
  if (!open_.empty() && begin < open_.back().span.second) return false;
  open_.push_back(Range{.span = {begin, end}});
  return true;
}

bool CursorWindow::Ack(std::uint64_t begin, std::uint64_t end) {
  Range* r = Find(begin, end);
  if (!r) return false;
  auto& a = r->acked;
  a.emplace_back(begin, end);
  std::sort(a.begin(), a.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
  for (const auto& piece : a) {
    if (!merged.empty() && piece.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, piece.second);
    } else {
      merged.push_back(piece);
    }
  }
  a = std::move(merged);
  Retire();
  return true;
}

std::uint64_t CursorWindow::acked_end() const {
  if (open_.empty()) return base_;
  const Range& front = open_.front();
  if (front.span.first != base_ || front.acked.empty() || front.acked[0].first != base_) {
    return base_;
  }
  return front.acked[0].second;
}

bool CursorWindow::Inside(std::uint64_t offset) const {
  return std::any_of(open_.begin(), open_.end(), [&](const Range& r) {
    return offset > r.span.first && offset < r.span.second;
  });
}

CursorWindow::Range* CursorWindow::Find(std::uint64_t begin, std::uint64_t end) {
  for (Range& r : open_) {
    if (begin >= r.span.first && end <= r.span.second && begin < end) return &r;
  }
  return nullptr;
}

void CursorWindow::Retire() {
  while (!open_.empty() && open_.front().whole() && open_.front().span.first == base_) {
    base_ = open_.front().span.second;
    open_.pop_front();
  }
}

}  // namespace fwdsink
