// SPDX-License-Identifier: Apache-2.0
// The daemon's metrics and health endpoints (--metrics-listen): GET /metrics in the
// Prometheus text format, GET /healthz and GET /readyz. @ref LLP 0025#metrics
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "fwdsink/dead_letters.h"
#include "fwdsink/driver.h"
#include "fwdsink/histogram.h"
#include "fwdsink/spool_stats.h"
#include "fwdsink/telemetry.h"
#include "http_listener.h"
#include "listen.h"

namespace fwdsink_cli {

// Whether the daemon can do its job, for /readyz.
struct Readiness {
  bool ready = true;
  std::string reason;  // why not, one line
  std::string note;    // said while ready (e.g. the engine cannot dedupe retries), or ""
};

// Tracks what /readyz answers. Ready when the spool's folders are usable and the last
// pass did not stop on an auth, TLS or configuration error (forward.auth_failed,
// forward.tls_error, forward.config_error, driver.permanent_error): such an error
// keeps it not ready until a chunk is acknowledged again. Ignores backpressure (a
// throttled daemon is doing its job). OnEvent() runs on the sending thread, Check()
// on the HTTP server's; both take mu_. @ref LLP 0025#readiness
class Health {
 public:
  explicit Health(std::filesystem::path spool) : spool_(std::move(spool)) {}
  // Gives the driver whose acknowledgements clear an error (before the first tick).
  void Attach(const fwdsink::Driver* driver) { driver_.store(driver); }
  // Notes one sink/driver event.
  void OnEvent(const fwdsink::Event& e);
  // Returns the readiness now.
  [[nodiscard]] Readiness Check() const;
  // Sets the note /readyz adds while ready ("" clears it). Any thread. @ref LLP 0017#dedup-window
  void SetNote(std::string note) {
    std::lock_guard lock(mu_);
    note_ = std::move(note);
  }

 private:
  [[nodiscard]] std::uint64_t Acked() const;

  const std::filesystem::path spool_;
  std::atomic<const fwdsink::Driver*> driver_{nullptr};
  mutable std::mutex mu_;
  std::string blocked_;               // guarded by mu_: the error, "" when none
  std::uint64_t acked_at_block_ = 0;  // guarded by mu_: chunks_acked when it happened
  std::string note_;                  // guarded by mu_
};

// What the /metrics page and the stats line report besides the counter lists.
struct MetricsSources {
  const fwdsink::Driver* driver = nullptr;
  const fwdsink::LatencyHistogram* latency = nullptr;
  const Health* health = nullptr;
  std::filesystem::path spool;
  std::string url;
  fwdsink::DeadCaps dead_caps;
};

// Renders the /metrics page. Any thread.
[[nodiscard]] std::string MetricsPage(const MetricsSources& s);
// The stats line's "spool" object: the backlog and dead letters against their caps.
[[nodiscard]] fwdsink::JsonObject SpoolJson(const std::filesystem::path& spool,
                                            const fwdsink::DeadCaps& caps);

// Records `e` in SPOOL/last_error.json when it is an error worth it (IsRecordedError),
// for `fwdsink status`. Best effort: a failure to write is not reported. Sending thread.
void RecordLastError(const std::filesystem::path& spool, const fwdsink::Event& e);

// Serves /metrics, /healthz and /readyz on its own thread until Stop() (or the
// destructor), through an HttpListener: slow clients are cut off after 2 s, at most 64
// connections, Stop() prompt whatever they do. Start and Stop on one thread (the
// daemon's main thread). @ref LLP 0023#metrics-server
class MetricsServer {
 public:
  // Binds `listen` (see ParseListen) and starts serving. On failure returns nullptr
  // and sets `error`.
  [[nodiscard]] static std::unique_ptr<MetricsServer> Start(std::string_view listen,
                                                            MetricsSources sources,
                                                            std::string& error,
                                                            HttpListenerLimits limits = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Returns "HOST:PORT" as bound (the real port when 0 was asked for).
  [[nodiscard]] const std::string& address() const { return address_; }
  // Stops serving and joins the thread; idempotent.
  void Stop();

 private:
  MetricsServer() = default;

  std::unique_ptr<HttpListener> server_;
  std::string address_;
  MetricsSources sources_;
};

}  // namespace fwdsink_cli
