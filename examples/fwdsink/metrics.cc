// SPDX-License-Identifier: Apache-2.0
#include "metrics.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

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
      return {false, "spool folder " + dir.string() + " is not usable", {}};
    }
  }
  std::lock_guard lock(mu_);
  if (!blocked_.empty() && Acked() <= acked_at_block_) return {false, blocked_, {}};
  return {true, {}, note_};
}

std::string MetricsPage(const MetricsSources& s) {
  PrometheusText page({{"endpoint", fwdsink::EndpointLabel(s.url)}});
  const fwdsink::Driver& d = *s.driver;
  page.CounterList("fwdsink_sink_", d.sink_counters());  // every sender's, summed
  // Each family once: the window's gauges go by the names issue 22 gave them (a
  // contract), not also as fwdsink_driver_ twins from the list. @ref LLP 0025#deprecated
  constexpr std::string_view kNamedApart[] = {"requests_in_flight", "concurrency_limit"};
  page.CounterList("fwdsink_driver_", fwdsink::Snapshot(d.counters()), kNamedApart);
  page.Gauge("fwdsink_requests_in_flight",
             "Requests in flight now, every partition's window together.",
             static_cast<double>(d.counters().requests_in_flight.load()));
  page.Gauge("fwdsink_concurrency_limit", "Requests allowed in flight now (the adaptive limit).",
             static_cast<double>(d.counters().concurrency_limit.load()));
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
                                                    std::string& error, HttpListenerLimits limits) {
  const auto where = ParseListen(listen);
  if (!where) {
    error = "'" + std::string(listen) + "' is not HOST:PORT";
    return nullptr;
  }
  std::unique_ptr<MetricsServer> m(new MetricsServer());
  m->sources_ = std::move(sources);
  const MetricsSources* src = &m->sources_;
  auto handler = [src](const std::string& path) -> HttpAnswer {
    if (path == "/metrics") {
      return {.content_type = std::string(fwdsink::kPrometheusContentType),
              .body = MetricsPage(*src)};
    }
    if (path == "/healthz") return {.body = "ok\n"};
    if (path == "/readyz") {
      const Readiness r = src->health->Check();
      return {.status = r.ready ? 200 : 503,
              .body = r.ready ? "ready\n" + (r.note.empty() ? "" : "note: " + r.note + "\n")
                              : "not ready: " + r.reason + "\n"};
    }
    return {.status = 404, .body = "not found\n"};
  };
  std::string why;
  m->server_ = HttpListener::Bind(where->first, where->second, std::move(handler), limits, why);
  if (!m->server_) {
    error = "cannot listen on " + std::string(listen) + ": " + why;
    return nullptr;
  }
  m->address_ = where->first + ":" + std::to_string(m->server_->port());
  m->server_->Start();
  return m;
}

void MetricsServer::Stop() {
  if (server_) server_->Stop();
}

MetricsServer::~MetricsServer() { Stop(); }

}  // namespace fwdsink_cli
