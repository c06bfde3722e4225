// SPDX-License-Identifier: Apache-2.0
// The deduplication-window check of --profile clickhouse (fwdsink/engine_check.h): reads
// the target ClickHouse table's replicated_deduplication_window over the endpoint, and
// weighs it against the longest retry span; and the worker that runs it off the sending
// thread. @ref LLP 0017#dedup-window
#include "fwdsink/engine_check.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "fwdsink/transport.h"
#include "io/http_rules.h"
#include "io/url.h"

namespace fwdsink {
namespace {

using std::chrono::duration_cast;
using std::chrono::seconds;

constexpr std::string_view kWindowSetting = "replicated_deduplication_window";
constexpr std::string_view kSecondsSetting = "replicated_deduplication_window_seconds";
// A CREATE TABLE with many columns is longer than the sink's 4 KiB error prefix.
constexpr std::size_t kAnswerBytes = 256 * 1024;
constexpr std::chrono::milliseconds kQueryConnectTimeout = std::chrono::seconds(2);
constexpr std::chrono::milliseconds kQueryResponseTimeout = std::chrono::seconds(5);
// One deadline for the whole of a query, whatever trickles in: a server that drips its
// answer a byte a second once held `--once` for 47 s (issue 38). @ref LLP 0017#dedup-window
constexpr std::chrono::milliseconds kQueryDeadline = std::chrono::seconds(5);

// Splits `url` at '?' (and drops a '#fragment').
std::pair<std::string_view, std::string_view> SplitQuery(std::string_view url) {
  url = url.substr(0, url.find('#'));
  const auto q = url.find('?');
  if (q == std::string_view::npos) return {url, {}};
  return {url.substr(0, q), url.substr(q + 1)};
}

// Calls `each` with every "name=value" parameter of a URL's query string.
template <typename Each>
void ForEachParam(std::string_view query, Each each) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    if (const std::string_view p = query.substr(0, amp); !p.empty()) each(p);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
  }
}

// `url` without its `query=` parameter, with a path ("/" when it had none).
std::string WithoutQueryParam(std::string_view url) {
  const auto [base, query] = SplitQuery(url);
  std::string kept;
  ForEachParam(query, [&kept](std::string_view p) {
    if (p.substr(0, p.find('=')) != "query") kept += (kept.empty() ? "" : "&") + std::string(p);
  });
  const auto authority = base.find("://");
  std::string out(base);
  if (base.find('/', authority == std::string_view::npos ? 0 : authority + 3) ==
      std::string_view::npos) {
    out += '/';
  }
  return kept.empty() ? out : out + "?" + kept;
}

// Quotes `s` as a ClickHouse string literal.
std::string Literal(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

// The number after "NAME = " in a CREATE TABLE's SETTINGS clause, if set there.
std::optional<std::uint64_t> TableSetting(std::string_view create, std::string_view name) {
  const auto settings = create.rfind(" SETTINGS ");
  if (settings == std::string_view::npos) return std::nullopt;
  std::string_view rest = create.substr(settings);
  for (auto at = rest.find(name); at != std::string_view::npos; at = rest.find(name, at + 1)) {
    const bool starts = rest[at - 1] == ' ' || rest[at - 1] == ',';
    std::size_t i = at + name.size();
    while (i < rest.size() && rest[i] == ' ') ++i;
    if (!starts || i >= rest.size() || rest[i] != '=') continue;  // a longer name
    ++i;
    while (i < rest.size() && rest[i] == ' ') ++i;
    std::uint64_t v = 0;
    bool digits = false;
    for (; i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])); ++i) {
      v = v * 10 + static_cast<std::uint64_t>(rest[i] - '0');
      digits = true;
    }
    if (digits) return v;
  }
  return std::nullopt;
}

// Parses "NAME\tVALUE" lines of system.merge_tree_settings into the window.
bool ServerDefaults(std::string_view body, DedupWindow& w) {
  bool window = false;
  while (!body.empty()) {
    const auto nl = body.find('\n');
    const std::string_view line = body.substr(0, nl);
    body = nl == std::string_view::npos ? std::string_view{} : body.substr(nl + 1);
    const auto tab = line.find('\t');
    if (tab == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, tab), value = line.substr(tab + 1);
    std::uint64_t v = 0;
    if (value.empty() || !std::all_of(value.begin(), value.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        })) {
      continue;
    }
    for (char c : value) v = v * 10 + static_cast<std::uint64_t>(c - '0');
    if (name == kWindowSetting) {
      w.blocks = v;
      window = true;
    } else if (name == kSecondsSetting) {
      w.seconds = v;
    }
  }
  return window;
}

std::string Reason(const QueryAnswer& a) {
  if (a.status == 0) return a.error.empty() ? "no answer" : a.error;
  std::string body = a.body.substr(0, 300);
  while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
  return "HTTP " + std::to_string(a.status) + (body.empty() ? "" : ": " + body);
}

EngineCheckResult Unreadable(EngineCheckResult r, const std::string& table,
                             const std::string& why) {
  r.verdict = EngineCheckResult::Verdict::kUnreadable;
  r.event.name = events::kDriverEngineUnchecked;
  r.event.reason = "unreadable";
  r.event.message = "cannot read the deduplication window of " + table +
                    " (not checked, forwarding goes on): " + why;
  return r;
}

// The window of `table` ("db.t" or "t"), or the reason it could not be read.
std::optional<DedupWindow> ReadWindow(const std::string& table, const QueryRunner& query,
                                      std::string& why) {
  const auto dot = table.find('.');
  const std::string where = dot == std::string::npos
                                ? "database = currentDatabase() AND name = " + Literal(table)
                                : "database = " + Literal(table.substr(0, dot)) +
                                      " AND name = " + Literal(table.substr(dot + 1));
  const QueryAnswer t = query("SELECT engine, create_table_query FROM system.tables WHERE " +
                              where + " FORMAT TSVRaw");
  if (t.status != 200) return why = Reason(t), std::nullopt;
  const auto tab = t.body.find('\t');
  if (tab == std::string::npos)
    return why = "no table " + table + " in system.tables", std::nullopt;
  DedupWindow w;
  w.replicated = t.body.substr(0, tab).find("Replicated") == 0;
  const QueryAnswer s =
      query("SELECT name, value FROM system.merge_tree_settings WHERE name IN (" +
            Literal(kWindowSetting) + ", " + Literal(kSecondsSetting) + ") FORMAT TSVRaw");
  if (s.status != 200) return why = Reason(s), std::nullopt;
  if (!ServerDefaults(s.body, w)) return why = "no " + std::string(kWindowSetting), std::nullopt;
  const std::string_view create = std::string_view(t.body).substr(tab + 1);
  if (auto v = TableSetting(create, kWindowSetting)) w.blocks = *v;
  if (auto v = TableSetting(create, kSecondsSetting)) w.seconds = *v;
  return w;
}

}  // namespace

DedupNeed DedupWindowNeeded(const BackpressurePolicy& policy, double fleet_inserts_per_s) {
  const auto span = duration_cast<seconds>(policy.inline_budget + policy.max_wait +
                                           std::chrono::milliseconds(999));
  const double rate = std::isfinite(fleet_inserts_per_s) ? std::max(fleet_inserts_per_s, 0.0) : 0;
  const double blocks = std::ceil(rate * static_cast<double>(span.count()));
  constexpr double kMax = static_cast<double>(std::numeric_limits<std::uint64_t>::max() / 2);
  return {.blocks = static_cast<std::uint64_t>(std::min(blocks, kMax)), .seconds = span};
}

std::optional<std::string> InsertTable(std::string_view url) {
  std::string sql;
  ForEachParam(SplitQuery(url).second, [&sql](std::string_view p) {
    if (p.substr(0, 6) == "query=") sql = url::DecodeQueryValue(p.substr(6));
  });
  const std::string lower = http_rules::ToLower(sql);
  const auto insert = lower.find("insert into ");
  if (insert == std::string::npos) return std::nullopt;
  std::size_t i = insert + 12;
  while (i < sql.size() && sql[i] == ' ') ++i;
  if (lower.compare(i, 6, "table ") == 0) i += 6;  // INSERT INTO TABLE t
  std::size_t end = i;
  while (end < sql.size() && sql[end] != ' ' && sql[end] != '(') ++end;
  std::string table = sql.substr(i, end - i);
  table.erase(std::remove(table.begin(), table.end(), '`'), table.end());
  if (table.empty()) return std::nullopt;
  return table;
}

QueryRunner ClickHouseQueryRunner(const ForwardOptions& options, std::stop_token stop) {
  TransportOptions t = options.transport;
  t.body_prefix_bytes = kAnswerBytes;
  // A check, not a chunk: a server that does not answer is given up on soon.
  t.connect_timeout = std::min(t.connect_timeout, kQueryConnectTimeout);
  t.response_timeout = std::min(t.response_timeout, kQueryResponseTimeout);
  t.read_timeout = std::min(t.read_timeout, kQueryResponseTimeout);
  HeaderList headers = options.headers;
  headers.emplace_back("Content-Type", "text/plain; charset=utf-8");
  if (options.basic_auth) {
    headers.emplace_back("Authorization", BasicAuthorization(options.basic_auth->user,
                                                             options.basic_auth->password));
  }
  const std::string url = WithoutQueryParam(options.url);
  auto mu = std::make_shared<std::mutex>();
  std::shared_ptr<HttpTransport> transport;
  return [url, t, headers, mu, transport, stop](const std::string& sql) mutable -> QueryAnswer {
    std::lock_guard lock(*mu);
    if (stop.stop_requested()) return {.status = 0, .body = {}, .error = "aborted: stopping"};
    if (!transport) {
      auto made = HttpTransport::Create(url, t);
      if (!made.ok()) return {.status = 0, .body = {}, .error = made.status().message()};
      transport = std::move(made).value();
    }
    std::string body = sql;
    // Abort() is sticky and safe from any thread: a stop mid-query ends it at once.
    const std::stop_callback abort(stop, [&transport] { transport->Abort(); });
    const TransportResult r =
        transport->Post(headers, body, "", {.time_left = kQueryDeadline, .allow_expect = false});
    if (r.error != TransportError::kNone) {
      transport.reset();  // a fresh connection for the next query
      return {.status = 0, .body = {}, .error = std::string(to_string(r.error)) + ": " + r.message};
    }
    return {.status = r.response.status, .body = r.response.body_prefix, .error = {}};
  };
}

EngineCheckResult CheckDedupWindow(const ForwardOptions& options, double fleet_inserts_per_s,
                                   const QueryRunner& query) {
  EngineCheckResult r;
  if (options.responses.profile != EngineProfile::kClickHouse) return r;
  const std::optional<std::string> table = InsertTable(options.url);
  if (!table) return r;
  r.need = DedupWindowNeeded(options.backpressure, fleet_inserts_per_s);
  std::string why;
  r.window = ReadWindow(*table, query, why);
  if (!r.window) return Unreadable(std::move(r), *table, why);
  const DedupWindow& w = *r.window;
  r.event.name = events::kDriverEngineWarning;
  if (!w.replicated) {
    r.verdict = EngineCheckResult::Verdict::kNotReplicated;
    r.event.reason = "not_replicated";
    r.note = *table +
             " is not a Replicated*MergeTree: ClickHouse 18.16 drops no re-sent chunk, so a lost "
             "acknowledgement stores its rows twice (LLP 0017#dedup-window)";
  } else if (w.blocks < r.need.blocks ||
             w.seconds < static_cast<std::uint64_t>(r.need.seconds.count())) {
    r.verdict = EngineCheckResult::Verdict::kTooSmall;
    r.event.reason = "dedup_window_too_small";
    r.note = *table + ": " + std::string(kWindowSetting) + " = " + std::to_string(w.blocks) + ", " +
             std::string(kSecondsSetting) + " = " + std::to_string(w.seconds) +
             "; a chunk re-sent " + std::to_string(r.need.seconds.count()) +
             " s after its first send needs " + std::to_string(r.need.blocks) + " blocks and " +
             std::to_string(r.need.seconds.count()) + " s at " +
             std::to_string(static_cast<long long>(std::ceil(fleet_inserts_per_s))) +
             " inserts/s (LLP 0017#dedup-window)";
  } else {
    r.verdict = EngineCheckResult::Verdict::kEnough;
    r.event = {};
    return r;
  }
  r.event.message = "the table cannot deduplicate every retry: " + r.note;
  return r;
}

EngineCheckWorker::EngineCheckWorker(std::function<void(std::stop_token)> check)
    : check_(std::move(check)), thread_([this] { Loop(); }) {}

EngineCheckWorker::~EngineCheckWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EngineCheckWorker::Trigger() {
  {
    std::lock_guard lock(mu_);
    pending_ = true;
  }
  cv_.notify_all();
}

void EngineCheckWorker::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return pending_ || stop_; });
    if (stop_) return;
    pending_ = false;
    lock.unlock();
    check_(stop_source_.get_token());
    lock.lock();
  }
}

}  // namespace fwdsink
