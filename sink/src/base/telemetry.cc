// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/telemetry.h"

#include <cstdint>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/json_writer.h"

namespace fwdsink {

// ordered_json: fields stay in the order they were added, which keeps log lines stable
// for the greps and jq filters that read them (scripts/demo.sh, tests/bench/run.sh).
struct JsonObject::Impl {
  nlohmann::ordered_json value = nlohmann::ordered_json::object();
};

JsonObject::JsonObject() : impl_(std::make_unique<Impl>()) {}
JsonObject::JsonObject(const JsonObject& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
// Moving does not allocate (it is noexcept); the moved-from object holds no Impl and
// may only be assigned to or destroyed, as the header says.
JsonObject::JsonObject(JsonObject&& other) noexcept : impl_(std::move(other.impl_)) {}
JsonObject& JsonObject::operator=(const JsonObject& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}
JsonObject& JsonObject::operator=(JsonObject&& other) noexcept {
  std::swap(impl_, other.impl_);
  return *this;
}
JsonObject::~JsonObject() = default;

namespace {
template <class T>
void Set(nlohmann::ordered_json& j, std::string_view key, T&& value) {
  j[std::string(key)] = std::forward<T>(value);
}
}  // namespace

JsonObject& JsonObject::Add(std::string_view key, std::string_view value) {
  Set(impl_->value, key, std::string(value));
  return *this;
}
JsonObject& JsonObject::Add(std::string_view key, const char* value) {
  return Add(key, std::string_view(value));
}
JsonObject& JsonObject::Add(std::string_view key, const std::string& value) {
  return Add(key, std::string_view(value));
}
JsonObject& JsonObject::Add(std::string_view key, bool value) {
  Set(impl_->value, key, value);
  return *this;
}
JsonObject& JsonObject::AddSigned(std::string_view key, std::int64_t value) {
  Set(impl_->value, key, value);
  return *this;
}
JsonObject& JsonObject::AddUnsigned(std::string_view key, std::uint64_t value) {
  Set(impl_->value, key, value);
  return *this;
}
JsonObject& JsonObject::Add(std::string_view key, const JsonObject& value) {
  Set(impl_->value, key, value.impl_->value);
  return *this;
}
JsonObject& JsonObject::Add(std::string_view key, const std::vector<JsonObject>& values) {
  auto array = nlohmann::ordered_json::array();
  for (const JsonObject& v : values) array.push_back(v.impl_->value);
  Set(impl_->value, key, std::move(array));
  return *this;
}
JsonObject& JsonObject::Add(std::string_view key, const std::vector<std::string>& values) {
  Set(impl_->value, key, values);
  return *this;
}
JsonObject& JsonObject::Append(const JsonObject& other) {
  for (const auto& [key, value] : other.impl_->value.items()) impl_->value[key] = value;
  return *this;
}

std::string JsonObject::Dump() const { return internal::DumpJson(impl_->value); }

JsonObject ToJsonObject(const Event& e) {
  JsonObject o;
  o.Add("event", e.name);
  if (!e.label.empty()) o.Add("label", e.label);
  if (!e.partition.empty()) o.Add("partition", e.partition);
  if (!e.key.empty()) o.Add("key", e.key);
  if (e.status != 0) o.Add("status", e.status);
  if (!e.reason.empty()) o.Add("reason", e.reason);
  if (e.attempt != 0) o.Add("attempt", e.attempt);
  if (e.wait.count() > 0) o.Add("wait_ms", e.wait.count());
  if (!e.wait_source.empty()) o.Add("wait_source", e.wait_source);
  if (!e.retry_after.empty()) o.Add("retry_after", e.retry_after);
  if (!e.phase.empty()) o.Add("phase", e.phase);
  if (e.begin != 0 || e.end != 0) {
    o.Add("begin", e.begin);
    o.Add("end", e.end);
  }
  if (e.name == events::kForwardPacing) {
    o.Add("rate_bytes_per_s", e.rate_bytes_per_s);
    o.Add("rate_requests_per_s", e.rate_requests_per_s);
    o.Add("request_interval_ms", e.request_interval_ms);
  }
  if (!e.endpoint.empty()) o.Add("endpoint", e.endpoint);
  if (!e.message.empty()) o.Add("message", e.message);
  return o;
}

std::string ToJson(const Event& e) { return ToJsonObject(e).Dump(); }

std::string_view to_string(CounterKind kind) {
  switch (kind) {
    case CounterKind::kCounter: return "counter";
    case CounterKind::kGauge: return "gauge";
  }
  return "counter";
}

// Both kinds are loaded the same way; the list macro's two arguments only matter to
// consumers that tell counters from gauges (ForEachCounter).
#define FWDSINK_INTERNAL_LOAD(name, help) out.name = c.name.load(std::memory_order_relaxed);

CountersSnapshot Snapshot(const Counters& c) {
  CountersSnapshot out;
  FWDSINK_SINK_COUNTERS(FWDSINK_INTERNAL_LOAD, FWDSINK_INTERNAL_LOAD)
  return out;
}

DriverCountersSnapshot Snapshot(const DriverCounters& c) {
  DriverCountersSnapshot out;
  FWDSINK_DRIVER_COUNTERS(FWDSINK_INTERNAL_LOAD, FWDSINK_INTERNAL_LOAD)
  return out;
}

EndpointCountersSnapshot Snapshot(const EndpointCounters& c) {
  EndpointCountersSnapshot out;
  FWDSINK_ENDPOINT_COUNTERS(FWDSINK_INTERNAL_LOAD, FWDSINK_INTERNAL_LOAD)
  return out;
}

#undef FWDSINK_INTERNAL_LOAD

namespace {
template <class Snap>
JsonObject CountersObject(const Snap& s) {
  JsonObject o;
  ForEachCounter(s, [&o](const CounterField& f) { o.Add(f.name, f.value); });
  return o;
}
}  // namespace

JsonObject ToJsonObject(const CountersSnapshot& s) { return CountersObject(s); }
JsonObject ToJsonObject(const DriverCountersSnapshot& s) { return CountersObject(s); }
JsonObject ToJsonObject(const EndpointCountersSnapshot& s) { return CountersObject(s); }
std::string ToJson(const CountersSnapshot& s) { return ToJsonObject(s).Dump(); }
std::string ToJson(const DriverCountersSnapshot& s) { return ToJsonObject(s).Dump(); }

LogLevel EventLevel(std::string_view event) {
  for (const EventInfo& e : kEventCatalogue) {
    if (e.name == event) return e.level;
  }
  return LogLevel::kInfo;
}

}  // namespace fwdsink
