// SPDX-License-Identifier: Apache-2.0
// The forward sink: the handle that holds what calls share (Impl), makes a call per
// partition or pack (engine/call.h: the one send path), and aborts them on Close().
// @ref LLP 0014#core
#include "fwdsink/forward_sink.h"

#include <mutex>
#include <utility>

#include "engine/call.h"
#include "engine/resolve_deps.h"
#include "engine/sink_impl.h"
#include "fwdsink/check.h"
#include "fwdsink/endpoints.h"
#include "fwdsink/forward_pack.h"

namespace fwdsink {
namespace {

// One connection per endpoint, in order.
Result<std::vector<EndpointLink>> MakeLinks(const ForwardOptions& options) {
  std::vector<EndpointLink> links;
  for (const std::string& url : EndpointUrls(options)) {
    Result<std::unique_ptr<HttpTransport>> made = HttpTransport::Create(url, options.transport);
    if (!made.ok()) return made.status().WithFieldPrefix("transport");
    links.push_back(EndpointLink{.transport = std::move(made).value()});
  }
  return links;
}

}  // namespace

Result<std::unique_ptr<ForwardSink>> ForwardSink::Create(ForwardOptions options, ForwardDeps deps) {
  if (Status e = Validate(options); !e.ok()) return e;
  Result<std::vector<EndpointLink>> links = MakeLinks(options);
  if (!links.ok()) return links.status();
  Result<ForwardDeps> resolved = ResolveDeps(options, std::move(deps));
  if (!resolved.ok()) return resolved.status();
  return std::unique_ptr<ForwardSink>(new ForwardSink(std::make_unique<Impl>(
      std::move(options), std::move(resolved).value(), std::move(links).value())));
}

ForwardSink::ForwardSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ForwardSink::~ForwardSink() = default;

ForwardResult ForwardSink::ForwardPartition(std::string_view partition,
                                            const std::filesystem::path& path, std::uint64_t begin,
                                            const AckCallback& on_ack,
                                            const PoisonCallback& on_poison) {
  return Call(*impl_, partition, on_ack, on_poison).Forward(path, ForwardStart{.begin = begin});
}

ForwardResult ForwardSink::ForwardPartition(std::string_view partition,
                                            const std::filesystem::path& path,
                                            const ForwardStart& start, const AckCallback& on_ack,
                                            const PoisonCallback& on_poison) {
  return Call(*impl_, partition, on_ack, on_poison).Forward(path, start);
}

PackResult ForwardSink::ForwardPack(const std::string& key,
                                    const std::vector<PackMember>& members) {
  FWDSINK_CHECK(!members.empty());
  static const AckCallback kNoAck;
  static const PoisonCallback kNoPoison;
  return Call(*impl_, members.front().partition, kNoAck, kNoPoison).ForwardPack(key, members);
}

void ForwardSink::Close() {
  // @ref LLP 0014#close
  impl_->stop.request_stop();  // wakes a pause at once (stop_callback on the sleeper's cv)
  // Shuts every connection's sockets: connect, send or header wait fail at once.
  impl_->connections.AbortAll();
}

bool ForwardSink::closed() const { return impl_->stop.stop_requested(); }

ForwardSink::State ForwardSink::state() const {
  std::lock_guard lock(impl_->state_mu);
  return impl_->state;
}

const Counters& ForwardSink::counters() const { return impl_->counters; }

PaceRate ForwardSink::pacing() const {
  const Endpoints& endpoints = *impl_->deps.endpoints;
  return endpoints.at(endpoints.active()).pacer->Current(impl_->deps.time->MonotonicNow());
}

const Endpoints& ForwardSink::endpoints() const { return *impl_->deps.endpoints; }

const ForwardOptions& ForwardSink::options() const { return impl_->options; }

}  // namespace fwdsink
