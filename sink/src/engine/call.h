// SPDX-License-Identifier: Apache-2.0
// Private to the engine: one call of the sink, the one send path. A partition's call
// keeps up to `window` chunks in flight at once, each with its own Request and Attempt
// ("a flight"); a pack's call has one flight, the pack's body. The call runs their steps
// on its thread (the one place that sleeps), posts on the connections' threads, takes
// acknowledgements in any order into the cursor window, and concludes each flight by the
// conclusion table. Implemented by call.cc (the loop), call_endings.cc (what each ending
// does) and call_pack.cc (what a pack reads, and its endings).
// @ref LLP 0014#core @ref LLP 0014#window @ref LLP 0027#call
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "engine/attempt.h"
#include "engine/chunk_source.h"
#include "engine/conclusion.h"
#include "engine/connection_pool.h"
#include "engine/cursor_window.h"
#include "engine/pacing_report.h"
#include "engine/request.h"
#include "engine/sink_impl.h"
#include "engine/start_spacing.h"
#include "fwdsink/forward_pack.h"

namespace fwdsink {

class ForwardSink::Call {
 public:
  Call(Impl& sink, std::string_view partition, const AckCallback& on_ack,
       const PoisonCallback& on_poison);
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  ForwardResult Forward(const std::filesystem::path& path, const ForwardStart& start);
  // Sends `members` (partition_ is the first one's) as one request under `key`.
  PackResult ForwardPack(const std::string& key, const std::vector<PackMember>& members);

 private:
  // How a chunk's attempts ended: on to the next chunk, or stop the partition.
  enum class ChunkEnd { kNext, kStop };

  // One chunk in flight: its bytes (held until it ends, for identical re-sends), its
  // request, its attempt and the attempt's pending step.
  struct Flight {
    PreparedChunk prepared;
    Request request{};
    std::unique_ptr<Attempt> attempt;
    Attempt::Step step{};
    int conn = -1;            // the connection its post runs on; -1 when not posting
    std::uint64_t bytes = 0;  // taken from the in-flight budget
    std::optional<MonotonicTime> held_since;  // its start waits for the spacing since then
  };
  using FlightIt = std::list<Flight>::iterator;
  struct Answered {
    Flight* flight;
    PostDone done;
  };

  // The loop (forward_sink.cc).
  void Pump();
  [[nodiscard]] bool CanOpen();
  [[nodiscard]] bool TakeSlot();
  [[nodiscard]] bool TakeBudget();
  [[nodiscard]] std::uint64_t BodyBytes(const PreparedChunk& c) const;
  void ReleaseSlots(std::size_t needed);
  void DropIdle(const Flight* except);
  void Refill();
  Flight& Open(std::uint64_t bytes);
  void Launch(Flight& f);
  [[nodiscard]] bool Journal();
  void Dispatch();
  [[nodiscard]] bool Spaced(Flight& f);
  void Send(Flight& f, int conn);
  [[nodiscard]] bool TakeAnswers();
  [[nodiscard]] static bool Acknowledged(const Flight& f);
  void WaitForEvent();
  void WakeDue(bool stopped);
  void Handle(FlightIt it);
  void Remove(FlightIt it);
  Attempt::Woken Sleep(const Flight& f);
  bool SleepUntilAnswer(MonotonicTime wake_at);
  FlightIt Find(const Flight* f);

  // The endings (call_endings.cc).
  ForwardResult Finish();
  void End(Ending ending, const Facts& facts);
  bool Shrunk();
  void SourceFailed(ChunkSource& source, SourceStatus status);
  void Emit(Event e);
  ChunkEnd Finished(Flight& f);
  ChunkEnd Verdicted(Flight& f);
  void GiveUp(const Attempt& attempt);
  ChunkEnd Split(const Verdict& v, Flight& f);
  static Facts ChunkFacts(const Verdict& v, const Request& request, std::string message);
  bool Acked(const Attempt& attempt, bool duplicate);
  bool Advance(const ChunkRange& c, bool duplicate, bool dead_lettered);
  [[nodiscard]] bool TellAcked(const AckedChunk& a);
  ChunkEnd Poisoned(const Verdict& v, const Request& request);
  ChunkEnd RequestRefused(const Verdict& v, const Request& request, const std::string& why);

  // A pack's (call_pack.cc).
  struct Pack {
    const std::string& key;
    const std::vector<PackMember>& members;
    PackResult out{};
  };
  [[nodiscard]] std::uint64_t PackBytes() const;
  [[nodiscard]] bool ReadPack(PreparedChunk& into);
  [[nodiscard]] bool EncodePack(PreparedChunk& c);
  ChunkEnd PackRefused(const Verdict& v, const Request& request);
  void PackDelivered();

  Impl& sink_;
  const ForwardOptions& options_;
  Counters& counters_;
  const std::string partition_;
  const AckCallback& on_ack_;
  const PoisonCallback& on_poison_;
  std::stop_token stop_;
  ForwardResult result_;
  std::filesystem::path path_;
  std::uint64_t file_size_ = 0;    // of the partition, when opened
  CursorWindow window_;            // the ranges in flight and the cursor route's view of them
  ChunkSource* source_ = nullptr;  // during Forward()
  std::optional<SourceStatus> source_end_;     // the source said kEnd or failed
  Pack* pack_ = nullptr;                       // during ForwardPack()
  CursorLog* cursor_log_ = nullptr;            // Not owned: ForwardStart's; null: none
  JournalCallback on_journal_;                 // empty: no journal callback
  std::size_t peak_ = 0;                       // the most flights at once in this call
  bool first_refill_ = true;                   // the journal on disk covers the first refill
  bool stopping_ = false;                      // a chunk's ending stopped the partition
  std::list<Flight> flights_;                  // by opening order; stable addresses
  std::vector<PreparedChunk> spare_;           // buffers of ended flights, reused
  std::size_t posting_ = 0;                    // flights whose post runs now
  std::size_t extras_ = 0;                     // request slots held beyond the first
  std::uint64_t bytes_held_ = 0;               // taken from the in-flight budget
  StartSpacing spacing_;                       // @ref LLP 0014#stagger
  std::optional<MonotonicTime> spaced_until_;  // a start waits for the spacing until then
  // Answers from the connections' threads; `wake_` cuts a sleep short when one arrives.
  std::mutex answers_mu_;
  std::condition_variable answers_cv_;
  std::vector<Answered> answers_;  // guarded by answers_mu_
  std::stop_source wake_;          // guarded by answers_mu_
  PacingReport pacing_;
  Route route_;
  Bisection bisection_;
  SendCore core_;  // last: refers to the members above
};

}  // namespace fwdsink
