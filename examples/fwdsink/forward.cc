// SPDX-License-Identifier: Apache-2.0
// `fwdsink forward`: runs a fwdsink::Driver over one spool until a signal (or one pass
// with --once), with a progress line on a terminal and JSON log lines otherwise.
//
// Threads: the main thread runs the driver; a signal thread waits in sigwait() for
// SIGINT/SIGTERM and calls Driver::Close(); a reporter thread draws the progress line
// or writes the periodic stats line. The sink's events arrive on the main thread.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "commands.h"
#include "fwdsink/credentials.h"
#include "fwdsink/driver.h"
#include "fwdsink/endpoints.h"
#include "fwdsink/engine_check.h"
#include "fwdsink/exit_code.h"
#include "fwdsink/http_header.h"
#include "fwdsink/settings.h"
#include "fwdsink/spool_stats.h"
#include "fwdsink/telemetry.h"
#include "fwdsink/time_format.h"
#include "fwdsink/transport.h"
#include "metrics.h"
#include "notify.h"
#include "progress.h"
#include "request_options.h"

namespace fwdsink_cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often the progress line is redrawn on a terminal.
constexpr milliseconds kProgressPeriod{500};
// Signal used only to wake the signal thread when the driver finishes on its own.
constexpr int kWakeSignal = SIGUSR1;

std::string NowIso8601() { return fwdsink::FormatRfc3339(std::chrono::system_clock::now()); }

// Where the daemon writes: JSON lines (stderr and/or --log-file) and the progress line.
// Every JSON line carries the event's `level`; lines below --log-level are not written
// anywhere. Any thread; all output is serialised by mu_ so lines never interleave, and
// Reopen() (SIGHUP) swaps the log file between two lines. @ref LLP 0022#logs
class Output {
 public:
  // Takes ownership of `log_file` (may be null).
  Output(bool progress, std::FILE* log_file, fwdsink::LogLevel min_level)
      : progress_(progress), min_level_(min_level), file_(log_file) {}
  ~Output() {
    if (file_) std::fclose(file_);
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  // Logs one sink/driver event at its catalogue level. @ref LLP 0024#log-level
  void Event(const fwdsink::Event& e) {
    const fwdsink::LogLevel level = fwdsink::EventLevel(e.name);
    std::lock_guard lock(mu_);
    // The progress line shows a permanent error until rows move again.
    // @ref LLP 0017#permanent-errors
    if (e.name == fwdsink::events::kDriverPermanentError) {
      problem_ = "ERROR " + std::to_string(e.status) + " " + e.reason;
    }
    if (level < min_level_) return;
    const std::string line = LogLine(fwdsink::ToJsonObject(e), level);
    if (progress_) {
      ClearLineLocked();
      std::fprintf(stderr, "%s\n", Human(e).c_str());
      RedrawLocked();
    } else {
      WriteLocked(stderr, line);
    }
    if (file_) WriteLocked(file_, line);
  }

  // Logs one JSON object (a stats or lifecycle line) at `level`; also shown on a
  // terminal when `show` is set.
  void Json(const fwdsink::JsonObject& json, fwdsink::LogLevel level, bool show) {
    if (level < min_level_) return;
    const std::string line = LogLine(json, level);
    std::lock_guard lock(mu_);
    if (!progress_)
      WriteLocked(stderr, line);
    else if (show) {
      ClearLineLocked();
      std::fprintf(stderr, "%s\n", json.Dump().c_str());
      RedrawLocked();
    }
    if (file_) WriteLocked(file_, line);
  }

  // Opens `path` again (append) and writes the next lines there: logrotate has renamed
  // the old file. Keeps the old file when the new one cannot be opened; returns whether
  // it could. @ref LLP 0024#reload
  bool Reopen(const std::filesystem::path& path) {
    std::FILE* fresh = std::fopen(path.c_str(), "a");
    if (!fresh) return false;
    std::lock_guard lock(mu_);
    if (file_) std::fclose(file_);
    file_ = fresh;
    return true;
  }

  // Replaces the progress line (terminal mode only).
  void Progress(std::string line) {
    std::lock_guard lock(mu_);
    if (!progress_) return;
    line_ = std::move(line);
    ClearLineLocked();
    RedrawLocked();
  }

  // Leaves the last progress line on screen and moves below it.
  void EndProgress() {
    std::lock_guard lock(mu_);
    if (progress_ && !line_.empty()) std::fprintf(stderr, "\n");
    line_.clear();
  }

  bool progress() const { return progress_; }

  // Returns the permanent error to show on the progress line ("" when none); clears it
  // when `moving` (rows were acknowledged since the last call).
  std::string Problem(bool moving) {
    std::lock_guard lock(mu_);
    if (moving) problem_.clear();
    return problem_;
  }

 private:
  static std::string Human(const fwdsink::Event& e) {
    std::string s = NowIso8601().substr(11, 12) + " " + std::string(e.name);
    if (!e.partition.empty()) s += " " + e.partition;
    if (e.status) s += " status=" + std::to_string(e.status);
    if (!e.reason.empty()) s += " reason=" + e.reason;
    if (e.wait.count() > 0) {
      s += " wait=" + std::to_string(e.wait.count()) + "ms";
      if (!e.wait_source.empty()) s += " (" + std::string(e.wait_source) + ")";
    }
    if (!e.message.empty()) s += ": " + e.message;
    return s;
  }
  // Every log line starts with its time and level: {"ts":"...","level":"info","event":...}
  static std::string LogLine(const fwdsink::JsonObject& body, fwdsink::LogLevel level) {
    fwdsink::JsonObject line;
    line.Add("ts", NowIso8601()).Add("level", fwdsink::to_string(level)).Append(body);
    return line.Dump();
  }
  static void WriteLocked(std::FILE* f, const std::string& line) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fflush(f);
  }
  void ClearLineLocked() {
    if (!line_.empty()) std::fprintf(stderr, "\r\033[K");
  }
  void RedrawLocked() {
    if (line_.empty()) return;
    std::fprintf(stderr, "%s", line_.c_str());
    std::fflush(stderr);
  }

  std::mutex mu_;
  const bool progress_;
  const fwdsink::LogLevel min_level_;
  std::FILE* file_;      // guarded by mu_ (owned)
  std::string line_;     // guarded by mu_
  std::string problem_;  // guarded by mu_
};

// The daemon.stats / daemon.exit object: both counter sets come from their one list
// in fwdsink/telemetry.h. Rates are whole numbers (rounded as printf's %.0f did).
fwdsink::JsonObject StatsJson(std::string_view event, const fwdsink::Driver& d, std::uint64_t left,
                              double rows_per_s, double bytes_per_s, const MetricsSources& ops) {
  fwdsink::JsonObject s;
  s.Add("event", event)
      .Add("label", d.sink().options().label)
      .Add("partitions_left", left)
      .Add("rows_per_s", static_cast<std::int64_t>(std::nearbyint(rows_per_s)))
      .Add("bytes_per_s", static_cast<std::int64_t>(std::nearbyint(bytes_per_s)))
      .Add("counters", fwdsink::ToJsonObject(d.sink_counters()))
      .Add("driver", fwdsink::ToJsonObject(fwdsink::Snapshot(d.counters())))
      .Add("spool", SpoolJson(ops.spool, ops.dead_caps));  // @ref LLP 0025#caps
  // With fallbacks, the endpoint in use and each endpoint's state and counters (a
  // single URL is in daemon.start already). @ref LLP 0019
  const fwdsink::Endpoints& eps = d.sink().endpoints();
  if (eps.size() > 1) {
    s.Add("endpoint", eps.at(eps.active()).name);
    std::vector<fwdsink::JsonObject> list;
    for (std::size_t i = 0; i < eps.size(); ++i) {
      list.push_back(fwdsink::JsonObject()
                         .Add("url", eps.at(i).name)
                         .Add("state", fwdsink::to_string(eps.state(i)))
                         .Append(fwdsink::ToJsonObject(fwdsink::Snapshot(eps.at(i).counters))));
    }
    s.Add("endpoints", list);
  }
  return s;
}

// {"fallback_urls": [...]} (credentials redacted), or {} with a single URL.
fwdsink::JsonObject FallbacksJson(const fwdsink::ForwardOptions& f) {
  fwdsink::JsonObject o;
  if (f.fallback_urls.empty()) return o;
  std::vector<std::string> urls;
  for (const std::string& url : f.fallback_urls) urls.push_back(fwdsink::RedactUrl(url));
  return o.Add("fallback_urls", urls);
}

std::string ProgressLine(const fwdsink::Driver& d, std::uint64_t left, double rows_per_s,
                         double bytes_per_s) {
  const auto acked = d.sink_counters().rows_acked;
  std::string s = "fwdsink: " + std::to_string(left) + " partitions left | " +
                  HumanRate(rows_per_s, "rows") + " | " + HumanRate(bytes_per_s, "B") + " | " +
                  std::to_string(acked) + " rows acked | ";
  const auto& c = d.counters();
  s += SendersText(d.sender_states(), c.requests_in_flight.load(std::memory_order_relaxed),
                   c.concurrency_limit.load(std::memory_order_relaxed), Clock::now());
  const fwdsink::Endpoints& eps = d.sink().endpoints();
  if (eps.size() > 1) s += " | to " + eps.at(eps.active()).name;
  return s + PacingText(d.sink().pacing());
}

// Draws the progress line (~2/s) or writes the stats line, until Stop().
class Reporter {
 public:
  Reporter(const fwdsink::Driver& driver, Output& out, const MetricsSources& ops,
           milliseconds stats_interval)
      : driver_(driver), out_(out), spool_(ops.spool), ops_(ops), stats_interval_(stats_interval) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Reporter() { Stop(); }

  // Stops the thread; prompt (it only waits on a condition variable). Any thread.
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

 private:
  void Loop() {
    const milliseconds period = out_.progress() ? kProgressPeriod : stats_interval_;
    auto last = Clock::now();
    auto last_stats = last;
    auto rows0 = driver_.sink_counters().rows_acked;
    auto bytes0 = driver_.sink_counters().bytes_acked;
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
      const auto now = Clock::now();
      const double secs = std::chrono::duration<double>(now - last).count();
      const fwdsink::CountersSnapshot sum = driver_.sink_counters();
      const auto rows = sum.rows_acked;
      const auto bytes = sum.bytes_acked;
      const double rps = secs > 0 ? static_cast<double>(rows - rows0) / secs : 0;
      const double bps = secs > 0 ? static_cast<double>(bytes - bytes0) / secs : 0;
      const std::uint64_t left = fwdsink::CountReadyPartitions(spool_);
      if (out_.progress()) {
        std::string line = ProgressLine(driver_, left, rps, bps);
        if (const std::string problem = out_.Problem(rows > rows0); !problem.empty()) {
          line += " | " + problem;
        }
        out_.Progress(std::move(line));
        // The --log-file still gets its periodic stats line.
        if (now - last_stats >= stats_interval_) {
          out_.Json(StatsJson(fwdsink::events::kDaemonStats, driver_, left, rps, bps, ops_),
                    fwdsink::EventLevel(fwdsink::events::kDaemonStats), false);
          last_stats = now;
        }
      } else {
        out_.Json(StatsJson(fwdsink::events::kDaemonStats, driver_, left, rps, bps, ops_),
                  fwdsink::EventLevel(fwdsink::events::kDaemonStats), true);
      }
      last = now;
      rows0 = rows;
      bytes0 = bytes;
    }
  }

  const fwdsink::Driver& driver_;
  Output& out_;
  const std::filesystem::path spool_;
  const MetricsSources& ops_;
  const milliseconds stats_interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

// The request credentials of `forward` as the sink takes them.
fwdsink::RequestCredentials CredentialsOf(const fwdsink::ForwardOptions& forward) {
  fwdsink::RequestCredentials c{.headers = forward.headers, .basic_authorization = std::nullopt};
  if (forward.basic_auth) {
    c.basic_authorization =
        fwdsink::BasicAuthorization(forward.basic_auth->user, forward.basic_auth->password);
  }
  return c;
}

// SIGHUP: reopens --log-file, re-reads the header, Basic-auth and token files and
// publishes them to the senders (which take them before their next chunk: a wait in
// progress and the cursors are untouched). A file that cannot be read or validated
// keeps the old values and logs daemon.reload_failed. Signal thread. @ref LLP 0024#reload
void Reload(const ForwardConfig& config, Output& out, fwdsink::CredentialsBox& box) {
  std::vector<std::string> reloaded;
  std::string problem;
  if (config.daemon.log_file) {
    if (out.Reopen(*config.daemon.log_file))
      reloaded.emplace_back("log_file");
    else
      problem = "--log-file: cannot open " + config.daemon.log_file->string();
  }
  // Starts from the configured options: the headers given as values, no Basic auth.
  fwdsink::ForwardOptions fresh = config.driver.forward;
  fwdsink::Status e = LoadRequestSecrets(config.request, fresh);
  if (e.ok()) e = fwdsink::Validate(fresh);
  if (e.ok() && config.token_file) e = fwdsink::CheckTokenFile(*config.token_file);
  if (e.ok()) {
    box.Publish(CredentialsOf(fresh));
    reloaded.emplace_back("credentials");
  } else {
    problem += (problem.empty() ? "" : "; ") + e.message() + " (old credentials kept)";
  }
  fwdsink::JsonObject line;
  const std::string_view event =
      problem.empty() ? fwdsink::events::kDaemonReload : fwdsink::events::kDaemonReloadFailed;
  line.Add("event", event).Add("signal", SIGHUP).Add("reloaded", reloaded);
  if (!problem.empty()) line.Add("message", problem);
  out.Json(line, fwdsink::EventLevel(event), true);
}

// Blocks the stop signals in every thread (threads inherit the mask), so only the
// signal thread's sigwait() sees them; returns the set it waits for.
// @ref LLP 0022#signals
sigset_t BlockSignals() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);  // reload, on the signal thread @ref LLP 0024#reload
  sigaddset(&mask, kWakeSignal);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  // A peer closing mid-write must be an error value, not a dead process.
  std::signal(SIGPIPE, SIG_IGN);
  return mask;
}

// Says once which FWDSINK_* variables are no settings. Not an error (the environment is
// shared with other programs), but said as an event, so a typo is visible in the log
// too. @ref LLP 0024#environment
void WarnUnknownVariables(const ForwardConfig& config, Output& out) {
  if (config.unknown_variables.empty()) return;
  std::string message = "warning: ";
  for (const std::string& name : config.unknown_variables) {
    message += (&name == &config.unknown_variables.front() ? "" : "; ") + name +
               " is not a setting (ignored)";
  }
  fwdsink::JsonObject line;
  line.Add("event", fwdsink::events::kDaemonUnknownEnvironment)
      .Add("variables", config.unknown_variables)
      .Add("message", message);
  out.Json(line, fwdsink::EventLevel(fwdsink::events::kDaemonUnknownEnvironment), true);
}

// Completes the driver's options with the request secrets and the proxy; returns
// kExitOk, or kExitUsage (and says why).
int LoadSecretsAndProxy(const ForwardConfig& config, fwdsink::DriverOptions& options) {
  // Secrets are read here, once, and go into the options, never into a log.
  // @ref LLP 0017#request-options
  if (const fwdsink::Status e = LoadRequestSecrets(config.request, options.forward); !e.ok()) {
    // The status names the key and the file ("header_file F: ..."); say the flag too.
    std::cerr << UsageError{fwdsink::FlagForKey(e.field()), e.message()}.Text() << "\n";
    return kExitUsage;
  }
  options.forward.transport.proxy =
      config.request.proxy ? *config.request.proxy
                           : ProxyFromEnvironment(options.forward.url, ProcessEnvironment());
  return kExitOk;
}

// The sink's dependencies: its events go to `out`, `health` and the last-error record;
// latency into `latency`; credentials from `credentials` (which SIGHUP replaces); tokens
// from --token-file. Nullopt (and a message said) when the token file is unusable.
std::optional<fwdsink::ForwardDeps> DepsFor(const ForwardConfig& config, Output& out,
                                            Health& health,
                                            std::shared_ptr<fwdsink::LatencyHistogram> latency,
                                            std::shared_ptr<fwdsink::CredentialsBox> credentials) {
  fwdsink::ForwardDeps deps;
  deps.latency = std::move(latency);
  deps.on_event = [&out, &health, &config](const fwdsink::Event& e) {
    out.Event(e);
    health.OnEvent(e);
    RecordLastError(config.driver.spool_dir, e);
  };
  deps.credentials = std::move(credentials);
  if (config.token_file) {
    // @ref LLP 0022#token-file
    if (const fwdsink::Status bad = fwdsink::CheckTokenFile(*config.token_file); !bad.ok()) {
      // The message names the source; the token itself is never printed.
      std::cerr << UsageError{"--token-file", bad.message()}.Text() << "\n";
      return std::nullopt;
    }
    deps.tokens = fwdsink::FileTokenProvider(*config.token_file);
  }
  return deps;
}

// Says why the driver could not be created; returns the exit code (75 busy, 74 spool,
// 64 otherwise).
int CreateFailed(const fwdsink::Status& error) {
  if (error.code() == fwdsink::StatusCode::kBusy) {
    // Another daemon forwards this spool: try again later. @ref LLP 0023#spool-lock
    std::cerr << "fwdsink: --spool: " << error.message() << "\n";
  } else {
    std::cerr << UsageError{OptionForField(error.field()), error.message()}.Text() << "\n";
  }
  return fwdsink::CreateExitCode(error);
}

// Logs daemon.start.
void LogStart(const ForwardConfig& config, const MetricsServer* metrics, Output& out) {
  fwdsink::JsonObject start;
  start.Add("event", fwdsink::events::kDaemonStart)
      .Add("pid", ::getpid())
      .Add("mode", config.daemon.once ? "once" : "run")
      .Add("spool", config.driver.spool_dir.string())
      .Add("url", fwdsink::RedactUrl(config.driver.forward.url))
      .Append(FallbacksJson(config.driver.forward));
  if (metrics) start.Add("metrics", metrics->address());  // @ref LLP 0025#metrics
  out.Json(start, fwdsink::EventLevel(fwdsink::events::kDaemonStart), false);
}

// The engine check's run: can the table dedupe our retries? @ref LLP 0017#dedup-window
std::function<void(std::stop_token)> EngineCheckTask(const ForwardConfig& config, Output& out,
                                                     Health& health) {
  return [&config, &out, &health](std::stop_token stop) {
    fwdsink::ForwardOptions o = config.driver.forward;
    if (!LoadRequestSecrets(config.request, o).ok()) return;
    fwdsink::EngineCheckResult r = fwdsink::CheckDedupWindow(
        o, config.daemon.fleet_insert_rate, fwdsink::ClickHouseQueryRunner(o, stop));
    if (stop.stop_requested()) return;  // stopping: an aborted query says nothing
    r.event.label = o.label;
    if (!r.event.name.empty()) out.Event(r.event);
    health.SetNote(r.note);
  };
}

// SIGHUP, on the signal thread: Reload(), then the engine check again. Nothing may end
// the signal thread but a stop: a reload that throws is a failed reload, the old values
// kept. @ref LLP 0023#regular-files
void ReloadOnSignal(const ForwardConfig& config, Output& out, fwdsink::CredentialsBox& box,
                    fwdsink::EngineCheckWorker& engine_check) {
  try {
    Reload(config, out, box);
    engine_check.Trigger();
  } catch (const std::exception& e) {
    fwdsink::JsonObject line;
    line.Add("event", fwdsink::events::kDaemonReloadFailed)
        .Add("signal", SIGHUP)
        .Add("message", std::string("reload failed: ") + e.what() + " (old values kept)");
    out.Json(line, fwdsink::EventLevel(fwdsink::events::kDaemonReloadFailed), true);
  }
}

// The signal thread: sigwait()s on `mask`. SIGHUP calls `reload`; SIGINT/SIGTERM are
// stored in `stop_signal`, call `stop` and end the thread; kWakeSignal ends it once
// `finished` is set.
void WaitForSignals(const sigset_t& mask, const std::function<void()>& reload,
                    const std::function<void()>& stop, const std::atomic<bool>& finished,
                    std::atomic<int>& stop_signal) {
  for (;;) {
    int sig = 0;
    if (sigwait(&mask, &sig) != 0) continue;
    if (sig == kWakeSignal) {
      if (finished.load()) return;
      continue;  // someone else's SIGUSR1: ignore
    }
    if (sig == SIGHUP) {
      reload();
      continue;
    }
    stop_signal.store(sig);
    stop();
    return;
  }
}

// How a run ended: the exit code and the daemon.exit line's "why".
struct Ending {
  int code = kExitOk;
  std::string why;
};

// Runs the driver until a stop request, or one pass with --once.
Ending RunDriver(const ForwardConfig& config, fwdsink::Driver& driver,
                 const std::atomic<int>& stop_signal) {
  Ending end;
  if (config.daemon.once) {
    const fwdsink::TickReport report = driver.Tick();
    // A stop request is a clean shutdown (cursors are saved): 0, even mid-pass.
    end.code = stop_signal.load() ? kExitOk : fwdsink::OnceExitCode(report);
    end.why = stop_signal.load() ? "signal" : "once";
  } else {
    driver.Run();
    end.why = "signal";
    // Run() returns only after a stop request; anything else is a bug, and exit 0 would
    // leave the host without a forwarder (systemd restarts on failure only).
    // @ref LLP 0014#only-close-aborts
    if (!stop_signal.load()) {
      end.code = fwdsink::kExitSoftware;
      end.why = "stopped_unasked";
    }
  }
  return end;
}

// Logs daemon.exit: the stats, the exit code, why, and the stop signal if any.
void LogExit(const ForwardConfig& config, const fwdsink::Driver& driver, const MetricsSources& ops,
             const Ending& end, int stop_signal, Output& out) {
  fwdsink::JsonObject exit_line =
      StatsJson(fwdsink::events::kDaemonExit, driver,
                fwdsink::CountReadyPartitions(config.driver.spool_dir), 0, 0, ops);
  exit_line.Add("exit_code", end.code).Add("why", end.why);
  if (stop_signal) exit_line.Add("signal", stop_signal);
  out.Json(exit_line, fwdsink::EventLevel(fwdsink::events::kDaemonExit), true);
}

// Runs the created driver with the engine check, the reporter, the service manager's
// notifications and the signal thread around it, then stops them and logs daemon.exit.
// Returns the exit code.
int Serve(const ForwardConfig& config, const sigset_t& mask, Output& out, Health& health,
          fwdsink::CredentialsBox& credentials, fwdsink::Driver& driver, const MetricsSources& ops,
          MetricsServer* metrics) {
  // Can the table dedupe our retries? At start and on SIGHUP. @ref LLP 0017#dedup-window
  fwdsink::EngineCheckWorker engine_check(EngineCheckTask(config, out, health));
  engine_check.Trigger();
  Reporter reporter(driver, out, ops, config.daemon.stats_interval);
  // @ref LLP 0025#systemd: READY=1 once the spool is open and locked.
  ServiceNotifier notifier;
  LoopWatch watch(StallLimit(config.driver));
  const auto status_line = [&driver, &config] {
    return ProgressLine(driver, fwdsink::CountReadyPartitions(config.driver.spool_dir), 0, 0);
  };
  notifier.Ready(status_line());
  notifier.Start([&] { return watch.Healthy(SampleLoop(driver), Clock::now()); }, status_line,
                 config.daemon.stats_interval);
  std::atomic<bool> finished{false};
  std::atomic<int> stop_signal{0};
  std::thread signals([&] {
    WaitForSignals(
        mask, [&] { ReloadOnSignal(config, out, credentials, engine_check); },
        [&] {
          engine_check.Stop();  // a query to a silent server must not hold the exit
          // Close() only signals and shuts sockets down: Run()/Tick() return within ~100 ms.
          driver.Close();
        },
        finished, stop_signal);
  });

  const Ending end = RunDriver(config, driver, stop_signal);

  // The engine check is a side show: a query to a silent or dripping server must not
  // hold the exit (issue 38: --once within 1 s of its last delivery).
  engine_check.Stop();
  notifier.Stopping();
  finished.store(true);
  pthread_kill(signals.native_handle(), kWakeSignal);
  signals.join();
  reporter.Stop();
  if (metrics) metrics->Stop();
  out.EndProgress();
  LogExit(config, driver, ops, end, stop_signal.load(), out);
  return end.code;
}

}  // namespace

int RunForward(const ForwardConfig& config) {
  const sigset_t mask = BlockSignals();
  std::FILE* log_file = nullptr;
  if (config.daemon.log_file) {
    log_file = std::fopen(config.daemon.log_file->c_str(), "a");
    if (!log_file) {
      std::cerr << "fwdsink: --log-file: cannot open " << config.daemon.log_file->string() << "\n";
      return kExitIoErr;
    }
  }
  const bool progress = config.daemon.log_mode == LogMode::kProgress ||
                        (config.daemon.log_mode == LogMode::kAuto && ::isatty(STDERR_FILENO));
  Output out(progress, log_file, config.daemon.log_level);
  WarnUnknownVariables(config, out);

  fwdsink::DriverOptions options = config.driver;
  if (const int code = LoadSecretsAndProxy(config, options); code != kExitOk) return code;
  // @ref LLP 0025#metrics: the latency histogram, readiness, the last error recorded.
  auto latency = std::make_shared<fwdsink::LatencyHistogram>();
  Health health(config.driver.spool_dir);
  auto credentials = std::make_shared<fwdsink::CredentialsBox>();
  std::optional<fwdsink::ForwardDeps> deps = DepsFor(config, out, health, latency, credentials);
  if (!deps) return kExitUsage;
  // One pass sends what is ready now: no pack waits for partitions. @ref LLP 0027#choice
  if (config.daemon.once) options.pack_linger = std::chrono::milliseconds::zero();
  fwdsink::Result<std::unique_ptr<fwdsink::Driver>> created =
      fwdsink::Driver::Create(std::move(options), std::move(*deps));
  if (!created.ok()) return CreateFailed(created.status());
  std::unique_ptr<fwdsink::Driver> driver = std::move(created).value();
  health.Attach(driver.get());
  const MetricsSources ops{.driver = driver.get(),
                           .latency = latency.get(),
                           .health = &health,
                           .spool = config.driver.spool_dir,
                           .url = config.driver.forward.url,
                           .dead_caps = config.driver.dead_caps};
  std::unique_ptr<MetricsServer> metrics;
  if (config.daemon.metrics_listen) {
    std::string error;
    metrics = MetricsServer::Start(*config.daemon.metrics_listen, ops, error);
    if (!metrics) {
      std::cerr << UsageError{"--metrics-listen", error}.Text() << "\n";
      driver.reset();
      return kExitUsage;  // `out` owns the log file and closes it
    }
  }
  LogStart(config, metrics.get(), out);

  const int code = Serve(config, mask, out, health, *credentials, *driver, ops, metrics.get());
  driver.reset();
  return code;
}

}  // namespace fwdsink_cli
