// SPDX-License-Identifier: Apache-2.0
// The driver: forwards a spool's ready partitions, tick after tick, until closed.
// Its options and what a tick reports are in fwdsink/driver_options.h, included here.
// @ref LLP 0014#layers
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fwdsink/concurrency.h"
#include "fwdsink/driver_options.h"
#include "fwdsink/forward_sink.h"
#include "fwdsink/spool.h"
#include "fwdsink/telemetry.h"

namespace fwdsink {

// DriverCounters (the driver's counters) is generated in telemetry.h.

// Forwards every ready partition of one spool to one endpoint.
//
// Threads: Tick() and Run() are called from one driver thread. A tick with several
// ready partitions sends them on up to options.concurrency.max sender threads of its
// own (joined before Tick() returns), one ForwardSink each, made from copies of the one
// ForwardDeps: the callables in the deps (on_event, tokens, random) may then be called
// from several threads at once, and what they capture must be safe for that. Close()
// may be called from any thread (a signal-handling thread, typically), any number of
// times; it returns at once, and Run()/Tick() return within ~100 ms with every cursor
// at its last acknowledged chunk. counters() (overload_level and concurrency_limit
// included), sink(), sink_counters() and sender_states() are readable from any thread.
// The deps' lifetimes are as ForwardDeps says (they must outlive the driver).
// @ref LLP 0018
class Driver {
 public:
  // Creates a driver; returns a kInvalidConfig status naming the field ("spool_dir",
  // "forward.url", ...) when the options do not validate or the spool cannot be opened,
  // and kBusy (field "spool_dir", the message naming the holder's pid) when another
  // driver holds the spool's lock. The lock is held until the driver is destroyed.
  // @ref LLP 0023#spool-lock
  [[nodiscard]] static Result<std::unique_ptr<Driver>> Create(DriverOptions options,
                                                              ForwardDeps deps);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Forwards ready partitions oldest first, once each. A partition whose chunk
  // exhausts its inline budget is respooled and the tick moves on.
  TickReport Tick();
  // Ticks until Close(), pausing between ticks per the overload level.
  void Run();
  // Stops Run()/Tick() and aborts the sink's pause or request. Any thread, idempotent.
  void Close();
  [[nodiscard]] bool closed() const;

  [[nodiscard]] const DriverCounters& counters() const;
  // Returns the first sender: its options and pacing are the endpoint's, its counters
  // and state its own (use sink_counters() and sender_states() for all of them).
  [[nodiscard]] const ForwardSink& sink() const;
  // Returns the senders' counters summed (gauges: the largest). Any thread.
  [[nodiscard]] CountersSnapshot sink_counters() const;
  // Returns what each sender is doing now, one entry per sender. Any thread.
  [[nodiscard]] std::vector<ForwardSink::State> sender_states() const;
  // Returns the spool for reading (cursors, dead letters). Call it on the driver
  // thread while neither Tick() nor Run() runs: then no cursor save is in flight
  // (checked by FWDSINK_DCHECK).
  [[nodiscard]] const Spool& spool() const;

 private:
  struct Impl;  // the spool, the senders and their cursor writers, the limits
  explicit Driver(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace fwdsink
