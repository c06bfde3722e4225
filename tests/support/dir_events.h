// SPDX-License-Identifier: Apache-2.0
// DirEvents: what happened to the names in one folder, seen with Linux inotify. For the
// tests that a file appears whole, by a rename, and is never created, written or
// truncated under its final name (what "atomic" means to a reader of the folder).
#pragma once

#include <sys/inotify.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace fwdsink::test {

class DirEvents {
 public:
  // Starts watching `dir` (not its subfolders). ok() says whether that worked.
  explicit DirEvents(const std::filesystem::path& dir)
      : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ >= 0) {
      ok_ = ::inotify_add_watch(fd_, dir.c_str(),
                                IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM |
                                    IN_MOVED_TO | IN_DELETE) >= 0;
    }
  }
  ~DirEvents() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirEvents(const DirEvents&) = delete;
  DirEvents& operator=(const DirEvents&) = delete;

  [[nodiscard]] bool ok() const { return ok_; }

  // Returns the events queued since the last call, oldest first, as "what name"
  // ("create x", "modify x", "close_write x", "moved_from x", "moved_to x",
  // "delete x"). The kernel queues them as the calls happen: nothing to wait for.
  std::vector<std::string> Take() {
    std::vector<std::string> out;
    alignas(inotify_event) char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (std::size_t at = 0; at < static_cast<std::size_t>(n);) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
        const std::string name = e->len > 0 ? std::string(e->name) : std::string();
        for (const auto& [mask, what] : kNames) {
          if ((e->mask & mask) != 0) out.push_back(std::string(what) + " " + name);
        }
        at += sizeof(inotify_event) + e->len;
      }
    }
    return out;
  }

  // The kinds of the events in `events` about `name`, in order.
  static std::vector<std::string> Of(const std::vector<std::string>& events,
                                     const std::string& name) {
    std::vector<std::string> out;
    for (const auto& e : events) {
      const auto space = e.find(' ');
      if (e.substr(space + 1) == name) out.push_back(e.substr(0, space));
    }
    return out;
  }

 private:
  static constexpr std::pair<std::uint32_t, const char*> kNames[] = {
      {IN_CREATE, "create"},         {IN_MODIFY, "modify"},     {IN_CLOSE_WRITE, "close_write"},
      {IN_MOVED_FROM, "moved_from"}, {IN_MOVED_TO, "moved_to"}, {IN_DELETE, "delete"}};
  int fd_ = -1;
  bool ok_ = false;
};

}  // namespace fwdsink::test
