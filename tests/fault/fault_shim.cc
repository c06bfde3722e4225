// SPDX-License-Identifier: Apache-2.0
// An LD_PRELOAD shim that makes one system call of the spool fail, for the
// fault-injection matrix (tests/integration/fault_test.cc, LLP 0023#fault-injection).
//
// Environment:
//   FWDSINK_FAULT_OP     open | write | fsync | rename: the call to fail
//   FWDSINK_FAULT_PATH   substring of the path the call must concern ("/state", "/dead");
//                        for write and fsync, the path the descriptor was opened with
//   FWDSINK_FAULT_NTH    fail the Nth matching call (1-based), and only that one;
//                        0: fail every matching call (a folder that stays unwritable)
//   FWDSINK_FAULT_ERRNO  errno to fail with (default EIO)
//   FWDSINK_FAULT_LOG    file to append one line to per fault injected
//   FWDSINK_FAULT_ACTION fail (default): the call returns -1 with the errno;
//                        crash: the process dies (_exit(86)) instead of making the call;
//                        torn: for write, half the bytes are written, then it dies
//                        (journal_model_test's crash matrix, LLP 0020#cursor-v2)
// Without FWDSINK_FAULT_OP it passes everything through. Thread-safe (atomics only).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>

namespace {

constexpr int kMaxFd = 4096;
std::atomic<bool> g_watched[kMaxFd];  // descriptors opened on a matching path
std::atomic<long> g_seen{0};          // matching calls of the faulted op so far

const char* Env(const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : nullptr;
}

bool PathMatches(const char* path) {
  const char* want = Env("FWDSINK_FAULT_PATH");
  return path && want && strstr(path, want) != nullptr;
}

bool IsOp(const char* op) {
  const char* want = Env("FWDSINK_FAULT_OP");
  return want && strcmp(want, op) == 0;
}

// Counts one matching call of `op`; returns whether this one must fail.
bool ShouldFail(const char* op, const char* path) {
  if (!IsOp(op)) return false;
  const char* nth = Env("FWDSINK_FAULT_NTH");
  const long n = nth ? atol(nth) : 1;
  if (g_seen.fetch_add(1) + 1 != n && n != 0) return false;
  if (const char* log = Env("FWDSINK_FAULT_LOG")) {
    using OpenFn = int (*)(const char*, int, ...);
    static OpenFn real_open = reinterpret_cast<OpenFn>(dlsym(RTLD_NEXT, "open"));
    const int fd = real_open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      char line[512];
      const int len = snprintf(line, sizeof line, "%s %s\n", op, path ? path : "?");
      using WriteFn = ssize_t (*)(int, const void*, size_t);
      static WriteFn real_write = reinterpret_cast<WriteFn>(dlsym(RTLD_NEXT, "write"));
      if (len > 0) (void)real_write(fd, line, static_cast<size_t>(len));
      close(fd);
    }
  }
  const char* e = Env("FWDSINK_FAULT_ERRNO");
  errno = e ? atoi(e) : EIO;
  return true;
}

bool Action(const char* action) {
  const char* want = Env("FWDSINK_FAULT_ACTION");
  return want && strcmp(want, action) == 0;
}

// A crash at the call: the exit code says the shim killed the process.
[[noreturn]] void Crash() { _exit(86); }

// Paths of watched descriptors, for the log line; "fd" is enough to tell them apart.
bool FdWatched(int fd) { return fd >= 0 && fd < kMaxFd && g_watched[fd].load(); }

int AfterOpen(int fd, const char* path) {
  if (fd >= 0 && fd < kMaxFd) g_watched[fd].store(PathMatches(path));
  return fd;
}

template <typename Fn>
Fn Next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

// open() and open64() take the mode only with O_CREAT/O_TMPFILE; both are interposed
// (glibc's callers use either) and share this body.
#define FWDSINK_INTERPOSE_OPEN(name)                                \
  int name(const char* path, int flags, ...) {                      \
    static auto real = Next<int (*)(const char*, int, ...)>(#name); \
    mode_t mode = 0;                                                \
    if (flags & (O_CREAT | O_TMPFILE)) {                            \
      va_list ap;                                                   \
      va_start(ap, flags);                                          \
      mode = static_cast<mode_t>(va_arg(ap, int));                  \
      va_end(ap);                                                   \
    }                                                               \
    if (PathMatches(path) && ShouldFail("open", path)) {            \
      if (Action("crash")) Crash();                                 \
      return -1;                                                    \
    }                                                               \
    return AfterOpen(real(path, flags, mode), path);                \
  }

FWDSINK_INTERPOSE_OPEN(open)
FWDSINK_INTERPOSE_OPEN(open64)
#undef FWDSINK_INTERPOSE_OPEN

int close(int fd) {
  static auto real = Next<int (*)(int)>("close");
  if (fd >= 0 && fd < kMaxFd) g_watched[fd].store(false);
  return real(fd);
}

ssize_t write(int fd, const void* buf, size_t n) {
  static auto real = Next<ssize_t (*)(int, const void*, size_t)>("write");
  if (FdWatched(fd) && ShouldFail("write", "(watched fd)")) {
    if (Action("torn")) {
      (void)real(fd, buf, n / 2);
      Crash();
    }
    if (Action("crash")) Crash();
    return -1;
  }
  return real(fd, buf, n);
}

int fsync(int fd) {
  static auto real = Next<int (*)(int)>("fsync");
  if (FdWatched(fd) && ShouldFail("fsync", "(watched fd)")) {
    if (Action("crash")) Crash();
    return -1;
  }
  return real(fd);
}

int fdatasync(int fd) {
  static auto real = Next<int (*)(int)>("fdatasync");
  if (FdWatched(fd) && ShouldFail("fsync", "(watched fd)")) {
    if (Action("crash")) Crash();
    return -1;
  }
  return real(fd);
}

int rename(const char* from, const char* to) {
  static auto real = Next<int (*)(const char*, const char*)>("rename");
  if ((PathMatches(from) || PathMatches(to)) && ShouldFail("rename", to)) {
    if (Action("crash")) Crash();
    return -1;
  }
  return real(from, to);
}

}  // extern "C"
