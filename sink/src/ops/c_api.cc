// SPDX-License-Identifier: Apache-2.0
// The C API (fwdsink/fwdsink.h) over the C++ library: the settings table, the Driver
// and the SpoolWriter behind opaque handles. @ref LLP 0026#c-api
//
// Every entry point catches everything: no exception may cross into C (a C caller
// cannot catch it, and unwinding through C frames is undefined). Errors become return
// codes and a message in the caller's buffer.
#include "fwdsink/fwdsink.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "fwdsink/driver.h"
#include "fwdsink/exit_code.h"
#include "fwdsink/settings.h"
#include "fwdsink/spool_stats.h"
#include "fwdsink/spool_writer.h"
#include "fwdsink/telemetry.h"
#include "fwdsink/time_format.h"

#ifndef FWDSINK_VERSION
#error "FWDSINK_VERSION must be defined by the build"
#endif

namespace {

using EventCb = void (*)(fwdsink_t*, int, const char*, void*);
using StatsCb = void (*)(fwdsink_t*, const char*, size_t, void*);

// The where= of every value set through the API (the settings table names it in its
// messages). @ref LLP 0026#conf
constexpr const char* kWhere = "fwdsink_conf_set";
// A daemon-only key the C API still honours: it paces the stats callback.
constexpr std::string_view kStatsIntervalKey = "stats_interval";

// Copies `message` into the caller's buffer, truncated, always NUL-terminated.
void WriteError(char* errstr, size_t errlen, std::string_view message) noexcept {
  if (errstr == nullptr || errlen == 0) return;
  const size_t n = std::min(message.size(), errlen - 1);
  std::memcpy(errstr, message.data(), n);
  errstr[n] = '\0';
}

// What a C++ exception that reached the boundary says (a bug or std::bad_alloc).
std::string Describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc&) {
    return "out of memory";
  } catch (const std::exception& ex) {
    return std::string("internal error: ") + ex.what();
  } catch (...) {
    return "internal error: unknown exception";
  }
}

// The level of an event: the daemon's (fwdsink::EventLevel, LLP 0024#log-level) in
// syslog's numbers. @ref LLP 0026#events
int LevelOf(std::string_view name) {
  switch (fwdsink::EventLevel(name)) {
    case fwdsink::LogLevel::kError: return FWDSINK_LOG_ERR;
    case fwdsink::LogLevel::kWarn: return FWDSINK_LOG_WARNING;
    case fwdsink::LogLevel::kInfo: return FWDSINK_LOG_INFO;
    case fwdsink::LogLevel::kDebug: return FWDSINK_LOG_DEBUG;
  }
  return FWDSINK_LOG_INFO;
}

std::string NowIso8601() { return fwdsink::FormatRfc3339(std::chrono::system_clock::now()); }

// Runs `fn` on a new thread with every asynchronous signal blocked, so that the
// application's handlers and sigwait() never run on, or miss a signal to, our
// threads, and a peer closing a TLS socket mid-write cannot kill the process with
// SIGPIPE there. @ref LLP 0026#threads
template <typename Fn>
std::thread StartThreadMasked(Fn fn) {
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    std::thread t(std::move(fn));
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return t;
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
}

// Runs `op` (which returns a Status) behind the C boundary: 0 when it is OK, else -1
// with its message (or the exception's) in errstr.
template <class Op>
int StatusCall(char* errstr, size_t errlen, Op&& op) {
  try {
    const fwdsink::Status s = op();
    if (s.ok()) return 0;
    WriteError(errstr, errlen, s.ToString());
    return -1;
  } catch (...) {
    WriteError(errstr, errlen, Describe(std::current_exception()));
    return -1;
  }
}

// Returns the table's key for `key`. Issue 12 names the spool's key "spool_dir" (as
// DriverOptions does); while the table calls it "spool", both are accepted here.
// @ref LLP 0026#conf
std::string_view TableKey(std::string_view key) {
  if (key == "spool_dir" && fwdsink::FindSetting(key) == nullptr) return "spool";
  return key;
}

// The objects behind the handles. The handles' own structs (fwdsink_conf_s, ...) are
// never defined: the pointers are cast, so the library's debug information, and thus
// the recorded ABI, shows opaque handles whatever these classes hold. @ref LLP 0026#abi
struct Conf {
  fwdsink::Settings settings;
  void* opaque = nullptr;
  EventCb event_cb = nullptr;
  StatsCb stats_cb = nullptr;
};

// The forwarder behind fwdsink_t. The callbacks and the paths are set before any
// thread starts and never change.
struct Forwarder {
  void* opaque = nullptr;
  EventCb event_cb = nullptr;
  StatsCb stats_cb = nullptr;
  std::chrono::milliseconds stats_interval{};
  std::filesystem::path spool_dir;
  std::unique_ptr<fwdsink::Driver> driver;

  std::mutex mu;
  std::condition_variable cv;
  bool started = false;     // guarded by mu
  bool closed = false;      // guarded by mu
  bool stop_stats = false;  // guarded by mu
  std::thread runner;       // fwdsink_start()'s; joined by fwdsink_destroy()
  std::thread stats;        // the stats callback's; joined by fwdsink_destroy()
  std::mutex event_mu;      // held while event_cb runs

  fwdsink_t* handle() { return reinterpret_cast<fwdsink_t*>(this); }

  // Renders and hands over one event. Serialised by event_mu: the driver may emit
  // from more than one sending thread, and the header promises one call at a time.
  void Event(const fwdsink::Event& e) noexcept {
    try {
      fwdsink::JsonObject line;
      line.Add("ts", NowIso8601()).Append(fwdsink::ToJsonObject(e));
      const std::string json = line.Dump();
      std::lock_guard lock(event_mu);
      event_cb(handle(), LevelOf(e.name), json.c_str(), opaque);
    } catch (...) {
      // Out of memory while rendering: the event is dropped, the forwarding goes on.
    }
  }

  std::string StatsJson() const {
    fwdsink::JsonObject s;
    s.Add("ts", NowIso8601())
        .Add("event", fwdsink::events::kApiStats)
        .Add("label", driver->sink().options().label)
        .Add("partitions_left", fwdsink::CountReadyPartitions(spool_dir))
        .Add("counters", fwdsink::ToJsonObject(fwdsink::Snapshot(driver->sink().counters())))
        .Add("driver", fwdsink::ToJsonObject(fwdsink::Snapshot(driver->counters())));
    return s.Dump();
  }

  // The stats thread: one callback per interval until fwdsink_destroy().
  void StatsLoop() {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, stats_interval, [this] { return stop_stats; })) {
      lock.unlock();
      try {
        const std::string json = StatsJson();
        stats_cb(handle(), json.c_str(), json.size(), opaque);
      } catch (...) {
        // Out of memory while rendering: skip this one, try again next interval.
      }
      lock.lock();
    }
  }
};

struct Writer {
  explicit Writer(fwdsink::SpoolWriter w) : writer(std::move(w)) {}
  fwdsink::SpoolWriter writer;
};

Conf* In(fwdsink_conf_t* p) { return reinterpret_cast<Conf*>(p); }
[[maybe_unused]] const Conf* In(const fwdsink_conf_t* p) {
  return reinterpret_cast<const Conf*>(p);
}
Forwarder* In(fwdsink_t* p) { return reinterpret_cast<Forwarder*>(p); }
Writer* In(fwdsink_writer_t* p) { return reinterpret_cast<Writer*>(p); }
fwdsink_conf_t* Out(Conf* p) { return reinterpret_cast<fwdsink_conf_t*>(p); }

// Builds the forwarder's pieces from a configuration; the caller owns `conf`.
fwdsink::Result<std::unique_ptr<Forwarder>> Create(const Conf& conf) {
  fwdsink::Result<fwdsink::SinkSettings> built = conf.settings.Build();
  if (!built.ok()) return built.status();
  fwdsink::SinkSettings s = std::move(built).value();
  // Secrets are read here, once, into the options. @ref LLP 0017#request-options
  if (fwdsink::Status e = fwdsink::LoadRequestSecrets(s.request, s.driver.forward); !e.ok()) {
    return e;
  }
  // The daemon's rules: a token that would inject headers is refused up front, and the
  // proxy comes from the environment unless set. @ref LLP 0023#header-safety
  if (s.token_file) {
    if (fwdsink::Status e = fwdsink::CheckTokenFile(*s.token_file); !e.ok()) return e;
  }
  s.driver.forward.transport.proxy =
      s.request.proxy
          ? *s.request.proxy
          : fwdsink::ProxyFromEnvironment(s.driver.forward.url, fwdsink::ProcessEnvironment());
  auto fs = std::make_unique<Forwarder>();
  fs->opaque = conf.opaque;
  fs->event_cb = conf.event_cb;
  fs->stats_cb = conf.stats_cb;
  fs->stats_interval = s.daemon.stats_interval;
  fs->spool_dir = s.driver.spool_dir;
  fwdsink::ForwardDeps deps;
  if (s.token_file) deps.tokens = fwdsink::FileTokenProvider(*s.token_file);
  if (fs->event_cb) {
    Forwarder* raw = fs.get();  // outlives the driver: it owns it
    deps.on_event = [raw](const fwdsink::Event& e) { raw->Event(e); };
  }
  auto driver = fwdsink::Driver::Create(std::move(s.driver), std::move(deps));
  if (!driver.ok()) return driver.status();
  fs->driver = std::move(driver).value();
  if (fs->stats_cb && fs->stats_interval.count() > 0) {
    Forwarder* raw = fs.get();
    fs->stats = StartThreadMasked([raw] { raw->StatsLoop(); });
  }
  return fs;
}

}  // namespace

extern "C" {

const char* fwdsink_version(void) { return FWDSINK_VERSION; }

fwdsink_conf_t* fwdsink_conf_new(void) {
  try {
    return Out(new Conf());
  } catch (...) {
    return nullptr;
  }
}

fwdsink_conf_t* fwdsink_conf_dup(const fwdsink_conf_t* conf) {
  if (conf == nullptr) return nullptr;
  try {
    return Out(new Conf(*In(conf)));
  } catch (...) {
    return nullptr;
  }
}

void fwdsink_conf_destroy(fwdsink_conf_t* conf) { delete In(conf); }

fwdsink_conf_res_t fwdsink_conf_set(fwdsink_conf_t* conf, const char* key, const char* value,
                                    char* errstr, size_t errlen) {
  if (conf == nullptr || key == nullptr || value == nullptr) {
    WriteError(errstr, errlen, "fwdsink_conf_set: conf, key and value must not be NULL");
    return FWDSINK_CONF_INVALID;
  }
  try {
    const std::string_view table_key = TableKey(key);
    if (const fwdsink::SettingInfo* info = fwdsink::FindSetting(table_key);
        info != nullptr && info->daemon_only && info->key != kStatsIntervalKey) {
      // Refused, not ignored: a key that silently does nothing is a trap.
      // @ref LLP 0026#daemon-only-keys
      WriteError(errstr, errlen,
                 std::string(kWhere) + ": " + key +
                     ": a key of the fwdsink daemon only; the library does not use it");
      return FWDSINK_CONF_UNKNOWN;
    }
    const fwdsink::Status s =
        In(conf)->settings.Set(table_key, value, fwdsink::SettingSource::kApi, kWhere);
    if (s.ok()) return FWDSINK_CONF_OK;
    WriteError(errstr, errlen, s.message());
    return s.code() == fwdsink::StatusCode::kNotFound ? FWDSINK_CONF_UNKNOWN : FWDSINK_CONF_INVALID;
  } catch (...) {
    WriteError(errstr, errlen, Describe(std::current_exception()));
    return FWDSINK_CONF_INVALID;
  }
}

void fwdsink_conf_set_opaque(fwdsink_conf_t* conf, void* opaque) {
  if (conf != nullptr) In(conf)->opaque = opaque;
}

void fwdsink_conf_set_event_cb(fwdsink_conf_t* conf,
                               void (*event_cb)(fwdsink_t*, int, const char*, void*)) {
  if (conf != nullptr) In(conf)->event_cb = event_cb;
}

void fwdsink_conf_set_stats_cb(fwdsink_conf_t* conf,
                               void (*stats_cb)(fwdsink_t*, const char*, size_t, void*)) {
  if (conf != nullptr) In(conf)->stats_cb = stats_cb;
}

fwdsink_t* fwdsink_new(fwdsink_conf_t* conf, char* errstr, size_t errlen) {
  std::unique_ptr<Conf> owned(In(conf));  // taken over in every case
  if (!owned) {
    WriteError(errstr, errlen, "fwdsink_new: conf must not be NULL");
    return nullptr;
  }
  try {
    fwdsink::Result<std::unique_ptr<Forwarder>> created = Create(*owned);
    if (!created.ok()) {
      WriteError(errstr, errlen, created.status().ToString());
      return nullptr;
    }
    return std::move(created).value().release()->handle();
  } catch (...) {
    WriteError(errstr, errlen, Describe(std::current_exception()));
    return nullptr;
  }
}

int fwdsink_run_once(fwdsink_t* fs) {
  if (fs == nullptr) return FWDSINK_EXIT_USAGE;
  {
    std::lock_guard lock(In(fs)->mu);
    if (In(fs)->started) return FWDSINK_EXIT_USAGE;  // the driver runs on its own thread
  }
  try {
    return fwdsink::OnceExitCode(In(fs)->driver->Tick());
  } catch (...) {
    // Only an allocation failure can get here; the cursors are as the pass left them.
    return FWDSINK_EXIT_TEMPFAIL;
  }
}

int fwdsink_start(fwdsink_t* fs) {
  if (fs == nullptr) return -1;
  try {
    std::lock_guard lock(In(fs)->mu);
    if (In(fs)->started || In(fs)->closed) return -1;
    In(fs)->runner = StartThreadMasked([f = In(fs)] { f->driver->Run(); });
    In(fs)->started = true;
    return 0;
  } catch (...) {
    return -1;  // no thread could be created
  }
}

void fwdsink_close(fwdsink_t* fs) {
  if (fs == nullptr) return;
  // Driver::Close() only signals and shuts sockets down: prompt, any thread.
  In(fs)->driver->Close();
  {
    std::lock_guard lock(In(fs)->mu);
    In(fs)->closed = true;
  }
  In(fs)->cv.notify_all();
}

void fwdsink_destroy(fwdsink_t* fs) {
  if (fs == nullptr) return;
  fwdsink_close(fs);
  {
    std::lock_guard lock(In(fs)->mu);
    In(fs)->stop_stats = true;
  }
  In(fs)->cv.notify_all();
  if (In(fs)->runner.joinable()) In(fs)->runner.join();
  if (In(fs)->stats.joinable()) In(fs)->stats.join();
  delete In(fs);  // the driver's destructor releases the spool's lock
}

fwdsink_writer_t* fwdsink_writer_open(const char* spool_dir, uint64_t max_bytes,
                                      uint64_t max_age_ms, char* errstr, size_t errlen) {
  if (spool_dir == nullptr) {
    WriteError(errstr, errlen, "fwdsink_writer_open: spool_dir must not be NULL");
    return nullptr;
  }
  try {
    fwdsink::SpoolWriterOptions options;
    if (max_bytes > 0) options.max_bytes = max_bytes;
    if (max_age_ms > 0) {
      // Capped so the duration cannot overflow (a year is "never" for a partition).
      options.max_age = std::chrono::milliseconds(
          std::min<uint64_t>(max_age_ms, std::uint64_t{365} * 24 * 3600 * 1000));
    }
    fwdsink::Result<fwdsink::SpoolWriter> w = fwdsink::SpoolWriter::Open(spool_dir, options);
    if (!w.ok()) {
      WriteError(errstr, errlen, w.status().ToString());
      return nullptr;
    }
    return reinterpret_cast<fwdsink_writer_t*>(new Writer(std::move(w).value()));
  } catch (...) {
    WriteError(errstr, errlen, Describe(std::current_exception()));
    return nullptr;
  }
}

int fwdsink_writer_append(fwdsink_writer_t* w, const char* row, size_t len, char* errstr,
                          size_t errlen) {
  if (w == nullptr || (row == nullptr && len > 0)) {
    WriteError(errstr, errlen, "fwdsink_writer_append: writer and row must not be NULL");
    return -1;
  }
  return StatusCall(errstr, errlen, [&] {
    return In(w)->writer.Append(std::string_view(row == nullptr ? "" : row, len));
  });
}

int fwdsink_writer_poll(fwdsink_writer_t* w, char* errstr, size_t errlen) {
  if (w == nullptr) {
    WriteError(errstr, errlen, "fwdsink_writer_poll: writer must not be NULL");
    return -1;
  }
  return StatusCall(errstr, errlen, [&] { return In(w)->writer.Poll(); });
}

int fwdsink_writer_seal(fwdsink_writer_t* w, char* errstr, size_t errlen) {
  if (w == nullptr) {
    WriteError(errstr, errlen, "fwdsink_writer_seal: writer must not be NULL");
    return -1;
  }
  try {
    fwdsink::Result<std::optional<std::string>> sealed = In(w)->writer.Seal();
    if (!sealed.ok()) {
      WriteError(errstr, errlen, sealed.status().ToString());
      return -1;
    }
    return sealed->has_value() ? 1 : 0;
  } catch (...) {
    WriteError(errstr, errlen, Describe(std::current_exception()));
    return -1;
  }
}

int fwdsink_writer_close(fwdsink_writer_t* w, char* errstr, size_t errlen) {
  if (w == nullptr) return 0;
  std::unique_ptr<Writer> owned(In(w));  // freed whatever happens
  const int rc = fwdsink_writer_seal(w, errstr, errlen);
  return rc < 0 ? -1 : 0;
}

}  // extern "C"
