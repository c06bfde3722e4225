// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/prometheus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace fwdsink {
namespace {

// HELP text escapes only backslash and line feed (the format's rule for docstrings).
std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (const char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void AppendLabels(std::string& out, const MetricLabels& a, const MetricLabels& b) {
  if (a.empty() && b.empty()) return;
  out += '{';
  bool first = true;
  for (const MetricLabels* list : {&a, &b}) {
    for (const MetricLabel& l : *list) {
      if (!first) out += ',';
      first = false;
      out += l.name;
      out += "=\"";
      out += EscapeLabelValue(l.value);
      out += '"';
    }
  }
  out += '}';
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[40];
  // Counters are whole numbers: print them exactly while a double holds them exactly.
  if (value == std::floor(value) && std::fabs(value) < 9.007199254740992e15) {
    std::snprintf(buf, sizeof buf, "%.0f", value);
    return buf;
  }
  // The shortest form that reads back as the same double (0.005, not 0.0050000000000000001).
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

std::string EndpointLabel(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos)
    return std::string(url.substr(0, url.find_first_of("?#")));
  const std::string_view scheme = url.substr(0, scheme_end + 3);
  std::string_view rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("?#"));
  const auto path_at = rest.find('/');
  std::string_view authority = rest.substr(0, path_at);
  const std::string_view path = path_at == std::string_view::npos ? "" : rest.substr(path_at);
  // Credentials never reach a label. @ref LLP 0025#names
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  return std::string(scheme) + std::string(authority) + std::string(path);
}

ExportedName ExportedNameFor(std::string_view prefix, const CounterField& field) {
  ExportedName e{std::string(prefix) + std::string(field.name), 1, {}};
  // Base units: the lists count milliseconds; Prometheus wants seconds.
  // @ref LLP 0025#names
  if (e.name.ends_with("_ms")) {
    e.name.resize(e.name.size() - 3);
    e.name += "_seconds";
    e.scale = 1e-3;
  }
  // promtool's lint refuses abbreviated units: "_per_s" is spelled out. The old name
  // stays one release as a deprecated duplicate. @ref LLP 0025#deprecated
  if (e.name.ends_with("_per_s")) {
    e.deprecated = e.name;
    e.name += "econd";
  }
  if (field.kind == CounterKind::kCounter) {
    e.name += "_total";
    if (!e.deprecated.empty()) e.deprecated += "_total";
  }
  return e;
}

PrometheusText::PrometheusText(MetricLabels common) : common_(std::move(common)) {}

void PrometheusText::Family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += EscapeHelp(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusText::Sample(std::string_view name, double value, const MetricLabels& extra) {
  out_ += name;
  AppendLabels(out_, common_, extra);
  out_ += ' ';
  out_ += FormatMetricValue(value);
  out_ += '\n';
}

void PrometheusText::Counter(std::string_view name, std::string_view help, double value) {
  // A counter family is named without _total in TYPE/HELP by OpenMetrics, but the
  // 0.0.4 text format names the family as its sample: keep them equal.
  Family(name, "counter", help);
  Sample(name, value);
}

void PrometheusText::Gauge(std::string_view name, std::string_view help, double value) {
  Family(name, "gauge", help);
  Sample(name, value);
}

void PrometheusText::Histogram(std::string_view name, std::string_view help,
                               const HistogramSnapshot& h) {
  Family(name, "histogram", help);
  const std::string base(name);
  for (std::size_t i = 0; i < kLatencyBucketsSeconds.size(); ++i) {
    Sample(base + "_bucket", static_cast<double>(h.cumulative[i]),
           {{"le", FormatMetricValue(kLatencyBucketsSeconds[i])}});
  }
  Sample(base + "_bucket", static_cast<double>(h.count), {{"le", "+Inf"}});
  Sample(base + "_sum", h.sum_seconds);
  Sample(base + "_count", static_cast<double>(h.count));
}

void PrometheusText::Field(std::string_view prefix, const CounterField& field) {
  const ExportedName e = ExportedNameFor(prefix, field);
  std::string help(field.help);
  if (e.scale != 1) help += " Exported in seconds.";
  const std::string_view type = field.kind == CounterKind::kCounter ? "counter" : "gauge";
  Family(e.name, type, help);
  Sample(e.name, static_cast<double>(field.value) * e.scale);
  if (e.deprecated.empty()) return;
  Family(e.deprecated, type,
         "Deprecated, renamed to " + e.name + "; this name goes in the next release. " + help);
  Sample(e.deprecated, static_cast<double>(field.value) * e.scale);
}

void PrometheusText::CounterList(std::string_view prefix, const CountersSnapshot& s) {
  // transport_errors is one family labelled by phase: its per-phase fields are its
  // samples (their sum is the JSON's transport_errors). @ref LLP 0014#transport-phases
  constexpr std::string_view kPhased = "transport_errors";
  const std::string phased_prefix = std::string(kPhased) + "_";
  std::vector<CounterField> phases;
  ForEachCounter(s, [&](const CounterField& f) {
    if (f.name.starts_with(phased_prefix)) phases.push_back(f);
  });
  ForEachCounter(s, [&](const CounterField& f) {
    if (f.name.starts_with(phased_prefix)) return;
    if (f.name != kPhased) return Field(prefix, f);
    const ExportedName e = ExportedNameFor(prefix, f);
    Family(e.name, "counter", std::string(f.help) + " By the phase the request failed in.");
    for (const CounterField& p : phases) {
      Sample(e.name, static_cast<double>(p.value),
             {{"phase", std::string(p.name.substr(phased_prefix.size()))}});
    }
  });
}

void PrometheusText::CounterList(std::string_view prefix, const DriverCountersSnapshot& s,
                                 std::span<const std::string_view> apart) {
  ForEachCounter(s, [&](const CounterField& f) {
    if (std::find(apart.begin(), apart.end(), f.name) == apart.end()) Field(prefix, f);
  });
}

void PrometheusText::EndpointCounterLists(
    std::string_view prefix,
    const std::vector<std::pair<std::string, EndpointCountersSnapshot>>& endpoints) {
  if (endpoints.empty()) return;
  // Every snapshot lists the same fields in the same order: collect them once each.
  std::vector<std::vector<CounterField>> fields(endpoints.size());
  for (std::size_t e = 0; e < endpoints.size(); ++e) {
    ForEachCounter(endpoints[e].second, [&](const CounterField& f) { fields[e].push_back(f); });
  }
  for (std::size_t i = 0; i < fields.front().size(); ++i) {
    const CounterField& first = fields.front()[i];
    const ExportedName name = ExportedNameFor(prefix, first);
    Family(name.name, first.kind == CounterKind::kCounter ? "counter" : "gauge", first.help);
    for (std::size_t e = 0; e < endpoints.size(); ++e) {
      Sample(name.name, static_cast<double>(fields[e][i].value) * name.scale,
             {{"target", EndpointLabel(endpoints[e].first)}});
    }
  }
}

}  // namespace fwdsink
