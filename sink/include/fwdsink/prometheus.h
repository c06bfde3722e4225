// SPDX-License-Identifier: Apache-2.0
// The Prometheus text exposition format (version 0.0.4), written from the counter lists
// of telemetry.h and from gauges a daemon computes. @ref LLP 0025#metrics
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fwdsink/histogram.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

// The Content-Type of the text format.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

struct MetricLabel {
  std::string name;   // [a-zA-Z_][a-zA-Z0-9_]*, ours (never from outside)
  std::string value;  // any bytes: escaped when written
};
using MetricLabels = std::vector<MetricLabel>;

// Escapes a label value: backslash, double quote and line feed become \\, \" and \n.
[[nodiscard]] std::string EscapeLabelValue(std::string_view value);
// Formats a sample value: whole numbers without a fraction, others with 17 significant
// digits, and +Inf, -Inf, NaN as the format spells them.
[[nodiscard]] std::string FormatMetricValue(double value);

// Returns the endpoint label for `url`: scheme://host[:port]/path, with no userinfo
// (user, password) and no query or fragment (a query may carry a key or a token).
[[nodiscard]] std::string EndpointLabel(std::string_view url);

// How one counter list entry is exported: the list name with the prefix, "_ms" turned
// into "_seconds" (base units; the value scaled by 1e-3), "_per_s" into "_per_second"
// (no abbreviated units) and "_total" after counters. @ref LLP 0025#names
struct ExportedName {
  std::string name;
  double scale = 1;
  // The name this entry had before a rename, exported beside `name` for one release as a
  // deprecated duplicate (empty: none).
  std::string deprecated;
};
[[nodiscard]] ExportedName ExportedNameFor(std::string_view prefix, const CounterField& field);

// Builds one /metrics page. Every sample carries the `common` labels (the endpoint)
// first. Families are written in the order they are added; the caller adds each
// family once. Not thread-safe: one writer per page.
class PrometheusText {
 public:
  explicit PrometheusText(MetricLabels common = {});

  // Starts a family: its HELP and TYPE lines. `type` is counter, gauge or histogram.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  // Writes one sample of the current family (`name` is the sample's full name).
  void Sample(std::string_view name, double value, const MetricLabels& extra = {});
  // A family with one sample.
  void Counter(std::string_view name, std::string_view help, double value);
  void Gauge(std::string_view name, std::string_view help, double value);
  // A histogram family: _bucket (le=...), _sum and _count.
  void Histogram(std::string_view name, std::string_view help, const HistogramSnapshot& h);
  // One family per entry of the list, named by ExportedNameFor(prefix, entry).
  void CounterList(std::string_view prefix, const CountersSnapshot& s);
  // Entries named in `apart` are left out: the caller exports them under names of
  // their own, once (LLP 0025#deprecated).
  void CounterList(std::string_view prefix, const DriverCountersSnapshot& s,
                   std::span<const std::string_view> apart = {});
  // Several endpoints (LLP 0019): one family per entry of FWDSINK_ENDPOINT_COUNTERS, one
  // sample per endpoint, labelled target=<EndpointLabel of its URL> (the common
  // `endpoint` label stays the primary's). @ref LLP 0025#names
  void EndpointCounterLists(
      std::string_view prefix,
      const std::vector<std::pair<std::string, EndpointCountersSnapshot>>& endpoints);

  // Returns the page.
  [[nodiscard]] const std::string& text() const noexcept { return out_; }

 private:
  void Field(std::string_view prefix, const CounterField& field);

  MetricLabels common_;
  std::string out_;
};

}  // namespace fwdsink
