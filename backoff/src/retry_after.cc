// SPDX-License-Identifier: Apache-2.0
#include "fwdsink/retry_after.h"

#include <array>
#include <cstdint>

namespace fwdsink {
namespace {

using std::chrono::milliseconds;
using std::chrono::system_clock;

constexpr std::array<std::string_view, 7> kShortDays = {"Sun", "Mon", "Tue", "Wed",
                                                        "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 7> kLongDays = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                       "Thursday", "Friday", "Saturday"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

bool IsOws(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

// A tiny cursor over the field value. Every Take* consumes only on success.
class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}
  bool done() const { return s_.empty(); }

  bool Literal(std::string_view lit) {
    if (s_.substr(0, lit.size()) != lit) return false;
    s_.remove_prefix(lit.size());
    return true;
  }
  // Exactly `n` digits.
  bool Digits(int n, int* out) {
    if (s_.size() < static_cast<std::size_t>(n)) return false;
    int v = 0;
    for (int i = 0; i < n; ++i) {
      if (!IsDigit(s_[i])) return false;
      v = v * 10 + (s_[i] - '0');
    }
    s_.remove_prefix(n);
    *out = v;
    return true;
  }
  // One of `names`, case-sensitively (RFC 9110 §5.6.7: day-name and month are).
  template <std::size_t N>
  bool OneOf(const std::array<std::string_view, N>& names, int* index) {
    for (std::size_t i = 0; i < N; ++i) {
      if (Literal(names[i])) {
        *index = static_cast<int>(i);
        return true;
      }
    }
    return false;
  }

 private:
  std::string_view s_;
};

struct Fields {
  int year = 0, month = 0 /* 0-based */, day = 0, hour = 0, minute = 0, second = 0;
};

// time-of-day = hour ":" minute ":" second, each 2DIGIT.
bool TimeOfDay(Scanner& sc, Fields& f) {
  return sc.Digits(2, &f.hour) && sc.Literal(":") && sc.Digits(2, &f.minute) && sc.Literal(":") &&
         sc.Digits(2, &f.second);
}

// IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
bool ImfFixdate(std::string_view s, Fields& f) {
  Scanner sc(s);
  int wd = 0;
  return sc.OneOf(kShortDays, &wd) && sc.Literal(", ") && sc.Digits(2, &f.day) && sc.Literal(" ") &&
         sc.OneOf(kMonths, &f.month) && sc.Literal(" ") && sc.Digits(4, &f.year) &&
         sc.Literal(" ") && TimeOfDay(sc, f) && sc.Literal(" GMT") && sc.done();
}

// rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT
bool Rfc850(std::string_view s, Fields& f, int now_year) {
  Scanner sc(s);
  int wd = 0, yy = 0;
  if (!(sc.OneOf(kLongDays, &wd) && sc.Literal(", ") && sc.Digits(2, &f.day) && sc.Literal("-") &&
        sc.OneOf(kMonths, &f.month) && sc.Literal("-") && sc.Digits(2, &yy) && sc.Literal(" ") &&
        TimeOfDay(sc, f) && sc.Literal(" GMT") && sc.done())) {
    return false;
  }
  // RFC 9110 §5.6.7: a two-digit year that appears to be more than 50 years in the
  // future is the most recent past year with the same last two digits.
  int year = now_year - now_year % 100 + yy;
  if (year > now_year + 50) year -= 100;
  f.year = year;
  return true;
}

// asctime-date: Sun Nov  6 08:49:37 1994  (day is "SP DIGIT" or "2DIGIT")
bool Asctime(std::string_view s, Fields& f) {
  Scanner sc(s);
  int wd = 0;
  if (!(sc.OneOf(kShortDays, &wd) && sc.Literal(" ") && sc.OneOf(kMonths, &f.month) &&
        sc.Literal(" "))) {
    return false;
  }
  if (sc.Literal(" ")) {
    if (!sc.Digits(1, &f.day)) return false;
  } else if (!sc.Digits(2, &f.day)) {
    return false;
  }
  return sc.Literal(" ") && TimeOfDay(sc, f) && sc.Literal(" ") && sc.Digits(4, &f.year) &&
         sc.done();
}

std::optional<std::chrono::sys_seconds> ToTimePoint(const Fields& f) {
  using namespace std::chrono;
  // second 60 is allowed for a leap second (RFC 5322 §3.3 grammar that HTTP inherits).
  if (f.hour > 23 || f.minute > 59 || f.second > 60 || f.day < 1) return std::nullopt;
  const year_month_day ymd{year{f.year}, month{static_cast<unsigned>(f.month + 1)},
                           day{static_cast<unsigned>(f.day)}};
  if (!ymd.ok()) return std::nullopt;  // Feb 30, Apr 31, Feb 29 in a common year
  return sys_days{ymd} + hours{f.hour} + minutes{f.minute} + seconds{f.second};
}

int CurrentYear(system_clock::time_point now) {
  using namespace std::chrono;
  return static_cast<int>(year_month_day{floor<days>(now)}.year());
}

std::optional<std::chrono::sys_seconds> ParseDate(std::string_view s,
                                                  system_clock::time_point now) {
  Fields f;
  if (ImfFixdate(s, f) || Rfc850(s, f, CurrentYear(now)) || Asctime(s, f)) {
    return ToTimePoint(f);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::chrono::sys_seconds> ParseHttpDate(std::string_view value) {
  return ParseDate(TrimOws(value), system_clock::now());
}

std::optional<milliseconds> ParseRetryAfter(std::string_view value, system_clock::time_point now) {
  const std::string_view v = TrimOws(value);
  if (v.empty()) return std::nullopt;

  if (IsDigit(v.front())) {
    // delay-seconds = 1*DIGIT, saturating instead of overflowing.
    constexpr std::int64_t kMaxSeconds =
        std::chrono::duration_cast<std::chrono::seconds>(kRetryAfterSaturation).count();
    std::int64_t seconds = 0;
    for (char c : v) {
      if (!IsDigit(c)) return std::nullopt;  // "1.5", "10s", "1 2"
      if (seconds < kMaxSeconds) seconds = seconds * 10 + (c - '0');
    }
    if (seconds > kMaxSeconds) seconds = kMaxSeconds;
    return std::chrono::seconds{seconds};
  }

  const auto date = ParseDate(v, now);
  if (!date) return std::nullopt;
  // Compare in whole seconds first: a year-9999 date does not fit system_clock's
  // nanosecond time_point, so never convert before knowing it is near.
  const auto now_s = std::chrono::floor<std::chrono::seconds>(now);
  if (*date - now_s >= kRetryAfterSaturation) return kRetryAfterSaturation;
  if (*date - now_s <= std::chrono::seconds{-1}) return milliseconds::zero();
  const auto delta = std::chrono::time_point_cast<system_clock::duration>(*date) - now;
  if (delta <= system_clock::duration::zero()) return milliseconds::zero();
  return std::chrono::ceil<milliseconds>(delta);
}

}  // namespace fwdsink
