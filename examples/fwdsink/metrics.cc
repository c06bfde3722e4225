// SPDX-License-Identifier: Apache-2.0
#include "metrics.h"

#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>
#include <chrono>

#include "bind_problem.h"
#include "fwdsink/endpoints.h"
#include "fwdsink/prometheus.h"

namespace fwdsink_cli {
namespace {

using fwdsink::MetricLabels;
using fwdsink::PrometheusText;

bool IsBlockingError(std::string_view name) {
  namespace ev = fwdsink::events;
  return name == ev::kForwardAuthFailed || name == ev::kForwardTlsError ||
         name == ev::kForwardConfigError || name == ev::kDriverPermanentError;
}

double AgeSeconds(std::chrono::system_clock::time_point then) {
  const auto age = std::chrono::system_clock::now() - then;
  return std::max(0.0, std::chrono::duration<double>(age).count());
}

// The current wait of the sender: reason label and seconds left (0 when not waiting).
void WaitGauge(PrometheusText& page, const fwdsink::Driver& d) {
  const auto state = d.sink().state();
  page.Family("fwdsink_wait_remaining_seconds", "gauge",
              "Seconds left in the sender's current backoff wait, with its reason (0: not "
              "waiting).");
  using Phase = fwdsink::ForwardSink::State::Phase;
  if (state.phase != Phase::kWaiting) {
    page.Sample("fwdsink_wait_remaining_seconds", 0, {{"reason", ""}});
    return;
  }
  const auto left = std::chrono::duration<double>(state.until - std::chrono::steady_clock::now());
  page.Sample("fwdsink_wait_remaining_seconds", std::max(0.0, left.count()),
              {{"reason", state.reason.empty() ? "backpressure" : state.reason}});
}

void SpoolGauges(PrometheusText& page, const MetricsSources& s) {
  const auto usage = fwdsink::MeasureSpool(s.spool);
  page.Gauge("fwdsink_spool_up", "1 when the spool's folders could be measured, else 0.",
             usage.ok() ? 1 : 0);
  if (!usage.ok()) return;
  const fwdsink::SpoolUsage& u = *usage;
  page.Gauge("fwdsink_ready_partitions", "Sealed partitions waiting in ready/.",
             static_cast<double>(u.ready_partitions));
  page.Gauge("fwdsink_ready_bytes", "Bytes of the partitions waiting in ready/.",
             static_cast<double>(u.ready_bytes));
  page.Gauge("fwdsink_oldest_ready_age_seconds",
             "Age of the oldest partition waiting in ready/ (0 when none).",
             u.oldest_ready ? AgeSeconds(*u.oldest_ready) : 0);
  page.Gauge("fwdsink_dead_letters", "Dead letters kept in dead/.",
             static_cast<double>(u.dead_letters));
  page.Gauge("fwdsink_dead_bytes", "Bytes in dead/ (rows and records).",
             static_cast<double>(u.dead_bytes));
  if (s.dead_caps.max_bytes) {
    page.Gauge("fwdsink_dead_bytes_limit", "The --max-dead-bytes cap.",
               static_cast<double>(*s.dead_caps.max_bytes));
  }
  if (s.dead_caps.max_age) {
    page.Gauge("fwdsink_dead_age_limit_seconds", "The --max-dead-age cap.",
               std::chrono::duration<double>(*s.dead_caps.max_age).count());
  }
}

}  // namespace

void Health::OnEvent(const fwdsink::Event& e) {
  if (!IsBlockingError(e.name)) return;
  std::lock_guard lock(mu_);
  blocked_ = std::string(e.name) + (e.reason.empty() ? "" : " (" + e.reason + ")");
  if (!e.message.empty()) blocked_ += ": " + e.message;
  acked_at_block_ = Acked();
}

std::uint64_t Health::Acked() const {
  const fwdsink::Driver* d = driver_.load();
  return d ? d->sink_counters().chunks_acked : 0;  // every sender's
}

Readiness Health::Check() const {
  for (const char* sub : {"", "ready", "state", "dead"}) {
    const std::filesystem::path dir = *sub ? spool_ / sub : spool_;
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      return {false, "spool folder " + dir.string() + " is not usable"};
    }
  }
  std::lock_guard lock(mu_);
  if (!blocked_.empty() && Acked() <= acked_at_block_) return {false, blocked_};
  return {};
}

std::string MetricsPage(const MetricsSources& s) {
  PrometheusText page({{"endpoint", fwdsink::EndpointLabel(s.url)}});
  const fwdsink::Driver& d = *s.driver;
  page.CounterList("fwdsink_sink_", d.sink_counters());  // every sender's, summed
  page.CounterList("fwdsink_driver_", fwdsink::Snapshot(d.counters()));
  // Each endpoint's own counts, labelled by target (several --url). @ref LLP 0019
  const fwdsink::Endpoints& eps = d.sink().endpoints();
  std::vector<std::pair<std::string, fwdsink::EndpointCountersSnapshot>> per_endpoint;
  for (std::size_t i = 0; i < eps.size(); ++i) {
    per_endpoint.emplace_back(eps.at(i).url, fwdsink::Snapshot(eps.at(i).counters));
  }
  page.EndpointCounterLists("fwdsink_endpoint_", per_endpoint);
  SpoolGauges(page, s);
  WaitGauge(page, d);
  if (s.latency) {
    page.Histogram("fwdsink_request_duration_seconds",
                   "Time from sending a chunk's request to its response (or error).",
                   s.latency->Snapshot());
  }
  if (s.health) {
    page.Gauge("fwdsink_ready", "1 when /readyz answers 200.", s.health->Check().ready ? 1 : 0);
  }
  return page.text();
}

fwdsink::JsonObject SpoolJson(const std::filesystem::path& spool, const fwdsink::DeadCaps& caps) {
  fwdsink::JsonObject j;
  const auto usage = fwdsink::MeasureSpool(spool);
  if (!usage.ok()) return j.Add("error", usage.status().message());
  const fwdsink::SpoolUsage& u = *usage;
  j.Add("ready_partitions", u.ready_partitions)
      .Add("ready_bytes", u.ready_bytes)
      .Add("oldest_ready_age_s",
           static_cast<std::int64_t>(u.oldest_ready ? AgeSeconds(*u.oldest_ready) : 0))
      .Add("dead_letters", u.dead_letters)
      .Add("dead_bytes", u.dead_bytes);
  if (caps.max_bytes) j.Add("max_dead_bytes", *caps.max_bytes);
  if (caps.max_age) {
    j.Add("max_dead_age_s",
          static_cast<std::int64_t>(
              std::chrono::duration_cast<std::chrono::seconds>(*caps.max_age).count()));
  }
  return j;
}

void RecordLastError(const std::filesystem::path& spool, const fwdsink::Event& e) {
  if (!fwdsink::IsRecordedError(e.name)) return;
  (void)fwdsink::WriteLastError(spool, e, std::chrono::system_clock::now());
}

std::unique_ptr<MetricsServer> MetricsServer::Start(std::string_view listen, MetricsSources sources,
                                                    std::string& error) {
  const auto where = ParseListen(listen);
  if (!where) {
    error = "'" + std::string(listen) + "' is not HOST:PORT";
    return nullptr;
  }
  std::unique_ptr<MetricsServer> m(new MetricsServer());
  m->sources_ = std::move(sources);
  m->server_ = std::make_unique<httplib::Server>();
  httplib::Server& srv = *m->server_;
  const MetricsSources* src = &m->sources_;
  srv.Get("/metrics", [src](const httplib::Request&, httplib::Response& res) {
    res.set_content(MetricsPage(*src), std::string(fwdsink::kPrometheusContentType));
  });
  srv.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  srv.Get("/readyz", [src](const httplib::Request&, httplib::Response& res) {
    const Readiness r = src->health->Check();
    res.status = r.ready ? 200 : 503;
    res.set_content(r.ready ? std::string("ready\n") : "not ready: " + r.reason + "\n",
                    "text/plain");
  });
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a second
  // daemon would share a taken port silently and answer half the scrapes.
  // @ref LLP 0025#metrics
  srv.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  int port = where->second;
  if (port == 0) {
    port = srv.bind_to_any_port(where->first);
  } else if (!srv.bind_to_port(where->first, port)) {
    port = -1;
  }
  if (port <= 0) {
    error =
        "cannot listen on " + std::string(listen) + ": " + BindProblem(where->first, where->second);
    return nullptr;
  }
  m->address_ = where->first + ":" + std::to_string(port);
  m->thread_ = std::thread([&srv] { srv.listen_after_bind(); });
  // cpp-httplib 0.11's stop() does nothing before the loop has started (it has no
  // wait_until_ready): wait for it, so a Stop() right after Start() cannot hang.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!srv.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return m;
}

void MetricsServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

MetricsServer::~MetricsServer() { Stop(); }

}  // namespace fwdsink_cli
