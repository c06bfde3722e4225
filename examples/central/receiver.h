// SPDX-License-Identifier: Apache-2.0
// The ingest logic of fwdsink-central: authentication, fault injection, dedupe, the
// byte-rate token bucket, decoding, row validation, storage, stats and the request log.
//
// Threading: one Receiver is shared by every httplib worker thread. Its handlers may run
// concurrently; all mutable state is guarded by mu_ (shutdown state by stop_mu_).
// Create() and Register() are called by main before the server starts; BeginShutdown()
// and FlushAndLockForExit() by main's signal-waiting thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <httplib.h>

#include "options.h"

namespace central {

// What the receiver answers to one POST. The handler builds one of these, then Apply()
// turns it into the HTTP response, the stats and the request-log line.
struct Decision {
  int status = 200;
  std::string reason;                      // logged; for errors also the JSON details.reason
  std::string body;                        // JSON response body
  std::optional<std::string> retry_after;  // default value for 429/503, before overrides
  std::uint64_t rows = 0;
  // --ratelimit-headers: the bucket after this decision (tokens left, seconds to full).
  std::optional<std::pair<std::uint64_t, std::uint64_t>> bucket;
};

// What Receiver::HandleExpect gave a request it let through: its number, and the bucket
// tokens it took for the body (given back unless the body is stored).
struct ExpectClaim {
  std::uint64_t number = 0;    // 0: none (the request had no Expect)
  std::uint64_t reserved = 0;  // tokens taken for Content-Length bytes
};

class Receiver {
 public:
  // Creates DIR, loads DIR/keys.log, opens the output files. Returns nullptr and sets
  // *error when a file cannot be opened.
  [[nodiscard]] static std::unique_ptr<Receiver> Create(const Options& options, std::string* error);
  ~Receiver();
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  // Installs POST (any path), GET /stats and GET /healthz on server.
  void Register(httplib::Server& server);

  // Wakes every pending header delay; POSTs decided from now on answer 503.
  void BeginShutdown();

  // Flushes the output files and keeps mu_ locked for good, so that a forced process
  // exit cannot cut a chunk's write in half. Call only right before exiting.
  void FlushAndLockForExit();

 private:
  explicit Receiver(const Options& options);

  // Answers a request that carries "Expect: 100-continue" from its head, before its
  // body is read: the head checks of Decide(), a body past --max-body by its
  // Content-Length, a known key, and the token bucket by Content-Length. Returns the
  // final status, or 100 to have the body sent (and decided by HandlePost as usual).
  // @ref LLP 0011#expect-continue
  int HandleExpect(const httplib::Request& req, httplib::Response& res);
  // Returns (and forgets) the claim HandleExpect made for this request on this thread.
  static ExpectClaim TakeExpectClaim(const httplib::Request& req);
  // Waits --header-delay-ms before a POST is answered (at once after BeginShutdown()).
  void HoldHeaders();
  // Handles one POST from a worker thread.
  void HandlePost(const httplib::Request& req, httplib::Response& res,
                  const httplib::ContentReader& reader);
  // Decides the POST numbered post_number once its wire body has been read.
  // `reserved`: tokens already taken for it (ExpectClaim), so the bucket is not asked again.
  Decision Decide(const httplib::Request& req, std::uint64_t post_number, const std::string& wire,
                  bool read_ok, bool wire_too_large, std::uint64_t reserved);
  // Steps 3-6 of the decision order (shutdown, fault injection, auth, media type and
  // encoding): what the head alone decides; nullopt when they all pass.
  [[nodiscard]] std::optional<Decision> DecideHead(const httplib::Request& req,
                                                   std::uint64_t post_number);
  // Decodes, validates and stores the body of a request that passed every other check.
  Decision DecideBody(const std::string& key, const std::string& wire,
                      const std::string& content_encoding, std::uint64_t reserved);
  // Refills the bucket and returns a 429 when it cannot take `wire_bytes` now (under mu_,
  // only with --rate); takes no tokens.
  [[nodiscard]] std::optional<Decision> Throttle(std::uint64_t wire_bytes);
  [[nodiscard]] std::optional<Decision> CheckAuth(const httplib::Request& req);
  [[nodiscard]] bool IsInjected(std::uint64_t post_number) const;
  [[nodiscard]] bool DelayApplies(std::uint64_t post_number) const;
  // Stores an accepted chunk (under mu_); returns the admission decision.
  Decision Admit(const std::string& key, const std::string& wire, const std::string& decoded,
                 std::uint64_t rows, std::uint64_t reserved);
  void Apply(const httplib::Request& req, httplib::Response& res, Decision d,
             const std::string& key, const std::string& wire, const std::string& encoding);
  // Builds an error decision with the JSON body {"error":..,"details":{"reason":..}}.
  Decision Refuse(int status, const std::string& error, const std::string& reason,
                  bool padded) const;
  std::string ErrorBody(const std::string& error, const std::string& reason, bool padded) const;
  std::string StatsJson();
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> BucketState(double rate,
                                                                    double burst) const;

  const Options options_;
  const std::chrono::steady_clock::time_point start_;

  std::mutex mu_;
  std::FILE* received_ = nullptr;              // guarded by mu_
  std::FILE* keys_ = nullptr;                  // guarded by mu_
  std::FILE* request_log_ = nullptr;           // guarded by mu_
  std::unordered_set<std::string> keys_seen_;  // guarded by mu_
  // Token value -> when it was first presented (for --token-ttl). Guarded by mu_.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> token_first_seen_;
  // Token bucket (only with --rate); may go negative. Guarded by mu_.
  double tokens_ = 0;
  std::chrono::steady_clock::time_point tokens_at_;
  std::uint64_t post_count_ = 0;  // guarded by mu_; numbers POSTs from 1 in arrival order

  struct Stats {
    std::uint64_t requests = 0, accepted_chunks = 0, duplicate_chunks = 0, accepted_rows = 0,
                  throttled = 0, injected = 0, unauthorized = 0, too_large = 0, bad_request = 0,
                  unsupported = 0, shutting_down = 0, storage_errors = 0, bytes = 0,
                  decoded_bytes = 0;
    std::uint64_t held = 0;  // POSTs read to their end and in a header delay now
    // Body bytes read and not yet answered, and the most at once. @ref LLP 0011#open-bodies
    std::uint64_t open_body_bytes = 0, peak_open_body_bytes = 0;
  } stats_;  // guarded by mu_

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by stop_mu_
};

}  // namespace central
