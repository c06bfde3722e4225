// SPDX-License-Identifier: Apache-2.0
#include "engine/cursor_window.h"

#include <algorithm>

namespace fwdsink {

CursorWindow CursorWindow::Restore(std::uint64_t offset, std::span<const CursorRange> journal) {
  // Each owed journal range opens as a range of its own, not as a piece of the range it
  // was split from: its bytes and key are fixed by the journal, and a restart never
  // rebuilds the range around it. @ref LLP 0020#cursor-v2
  CursorWindow w(offset);
  for (const CursorRange& r : journal) {
    if (!w.Open(r.begin, r.end)) continue;
    if (r.acked) w.Ack(r.begin, r.end);
  }
  return w;
}

bool CursorWindow::Open(std::uint64_t begin, std::uint64_t end) {
  if (begin >= end || begin < base_) return false;
  if (Find(begin, end)) return true;  // a part of a range open already
  if (!open_.empty() && begin < open_.back().span.second) return false;
  open_.push_back(Range{.span = {begin, end}, .pieces = {{begin, end}}});
  return true;
}

bool CursorWindow::Ack(std::uint64_t begin, std::uint64_t end) {
  Range* r = Find(begin, end);
  if (!r) return false;
  auto& a = r->acked;
  a.emplace_back(begin, end);
  std::sort(a.begin(), a.end());
  std::vector<Span> merged;
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

bool CursorWindow::Split(std::uint64_t begin, std::uint64_t mid, std::uint64_t end) {
  if (!(begin < mid && mid < end)) return false;
  Range* r = Find(begin, end);
  if (!r) return false;
  const auto at = std::find(r->pieces.begin(), r->pieces.end(), Span{begin, end});
  if (at == r->pieces.end() || r->Covered(*at)) return false;
  *at = Span{mid, end};
  r->pieces.insert(at, Span{begin, mid});
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

std::uint64_t CursorWindow::end() const { return open_.empty() ? base_ : open_.back().span.second; }

bool CursorWindow::Inside(std::uint64_t offset) const {
  return std::any_of(open_.begin(), open_.end(), [&](const Range& r) {
    return offset > r.span.first && offset < r.span.second;
  });
}

std::vector<CursorRange> CursorWindow::Journal() const {
  std::vector<CursorRange> out;
  for (const Range& r : open_) {
    for (const Span& p : r.pieces) {
      const bool acked = r.Covered(p);
      if (acked && !out.empty() && out.back().acked && out.back().end == p.first) {
        out.back().end = p.second;
      } else {
        out.push_back(CursorRange{.begin = p.first, .end = p.second, .acked = acked});
      }
    }
  }
  return out;
}

std::vector<CursorRange> CursorWindow::Pending() const {
  std::vector<CursorRange> out;
  for (const Range& r : open_) {
    for (const Span& p : r.pieces) {
      if (!r.Covered(p)) out.push_back(CursorRange{.begin = p.first, .end = p.second});
    }
  }
  return out;
}

bool CursorWindow::Range::Covered(const Span& piece) const {
  // `acked` is merged: a piece acknowledged whole lies inside one of its spans.
  return std::any_of(acked.begin(), acked.end(), [&](const Span& a) {
    return a.first <= piece.first && piece.second <= a.second;
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
