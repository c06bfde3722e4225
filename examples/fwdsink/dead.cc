// SPDX-License-Identifier: Apache-2.0
// `fwdsink dead list|requeue|purge`: the operator's view of SPOOL/dead.
#include <chrono>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "fwdsink/spool.h"
#include "fwdsink/telemetry.h"
#include "fwdsink/time_format.h"

namespace fwdsink_cli {
namespace {

std::string Iso8601(std::chrono::system_clock::time_point t) {
  return fwdsink::FormatRfc3339(t, fwdsink::TimePrecision::kSeconds);
}

int ExitFor(const fwdsink::Status& s) {
  return s.code() == fwdsink::StatusCode::kNotFound || s.code() == fwdsink::StatusCode::kInvalidName
             ? kExitNoInput
             : kExitIoErr;
}

fwdsink::JsonObject ToJson(const fwdsink::DeadEntry& e) {
  fwdsink::JsonObject j;
  j.Add("name", e.name)
      .Add("partition", e.partition)
      .Add("kind", fwdsink::to_string(e.kind))
      .Add("begin", e.begin)
      .Add("end", e.end)
      .Add("rows", e.rows)
      .Add("status", e.status)
      .Add("reason", e.reason)
      .Add("dead_at", Iso8601(e.dead_at))
      .Add("rows_path", e.rows_path.string());
  if (e.requeued_at) j.Add("requeued_at", Iso8601(*e.requeued_at));
  if (e.requeued_as) j.Add("requeued_as", *e.requeued_as);
  j.Add("requeues", e.requeues);
  return j;
}

int List(fwdsink::Spool& spool, const DeadConfig& c) {
  auto list = spool.ListDead(c.filter, std::chrono::system_clock::now());
  if (!list) {
    std::cerr << "fwdsink: dead list: " << list.status().message() << "\n";
    return ExitFor(list.status());
  }
  if (c.json) {
    std::vector<fwdsink::JsonObject> entries;
    for (const auto& e : list->entries) entries.push_back(ToJson(e));
    fwdsink::JsonObject out;
    out.Add("total", list->total)
        .Add("offset", c.filter.offset)
        .Add("entries", entries)
        .Add("unreadable", list->unreadable);
    std::cout << out.Dump() << "\n";
    return kExitOk;
  }
  std::cout << std::left << std::setw(48) << "NAME"
            << " " << std::setw(7) << "KIND"
            << " " << std::setw(6) << "STATUS"
            << " " << std::setw(18) << "REASON"
            << " " << std::setw(8) << "ROWS"
            << " " << std::setw(20) << "DEAD_AT"
            << " REQUEUED_AS\n";
  for (const auto& e : list->entries) {
    std::cout << std::setw(48) << e.name << " " << std::setw(7) << fwdsink::to_string(e.kind) << " "
              << std::setw(6) << e.status << " " << std::setw(18) << e.reason << " " << std::setw(8)
              << e.rows << " " << std::setw(20) << Iso8601(e.dead_at) << " "
              << e.requeued_as.value_or("-") << "\n";
  }
  std::cout << list->entries.size() << " shown, " << list->total << " matching\n";
  for (const auto& bad : list->unreadable) {
    std::cerr << "fwdsink: dead list: unreadable record " << bad << "\n";
  }
  return kExitOk;
}

int Requeue(fwdsink::Spool& spool, const DeadConfig& c) {
  int rc = kExitOk;
  // Each name is tried even if an earlier one failed; the first failure sets the code.
  for (const auto& name : c.names) {
    auto r = spool.Requeue(name, std::chrono::system_clock::now());
    if (!r) {
      std::cerr << "fwdsink: dead requeue: " << name << ": " << r.status().message() << "\n";
      if (rc == kExitOk) rc = ExitFor(r.status());
      continue;
    }
    std::cout << name << " -> " << *r << "\n";
  }
  return rc;
}

int Purge(fwdsink::Spool& spool, const DeadConfig& c) {
  if (!c.names.empty()) {
    int rc = kExitOk;
    for (const auto& name : c.names) {
      if (auto s = spool.Purge(name); !s.ok()) {
        std::cerr << "fwdsink: dead purge: " << name << ": " << s.message() << "\n";
        if (rc == kExitOk) rc = ExitFor(s);
        continue;
      }
      std::cout << "purged " << name << "\n";
    }
    return rc;
  }
  // --all is an empty filter; a filter purges every match (paging does not apply).
  auto n = spool.Purge(c.filter, std::chrono::system_clock::now());
  if (!n) {
    std::cerr << "fwdsink: dead purge: " << n.status().message() << "\n";
    return ExitFor(n.status());
  }
  std::cout << "purged " << *n << " dead letters\n";
  return kExitOk;
}

}  // namespace

int RunDead(const DeadConfig& c) {
  auto spool = fwdsink::Spool::Open(c.spool);
  if (!spool) {
    std::cerr << "fwdsink: --spool: " << spool.status().message() << "\n";
    return kExitIoErr;
  }
  switch (c.action) {
    case DeadAction::kList: return List(*spool, c);
    case DeadAction::kRequeue: return Requeue(*spool, c);
    case DeadAction::kPurge: return Purge(*spool, c);
  }
  return kExitUsage;
}

}  // namespace fwdsink_cli
