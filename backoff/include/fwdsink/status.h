// SPDX-License-Identifier: Apache-2.0
// One result type for the whole library: Status (a code, the field concerned, a
// sentence) and Result<T> (a value or the Status saying why there is none).
//
// Modelled on absl::Status / absl::StatusOr: a Result never holds an OK status without
// a value, and value() on an error is a checked failure (abort with the message), not
// undefined behaviour. Failures that happen in normal operation come back as values;
// nothing here throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "fwdsink/check.h"

namespace fwdsink {

// What went wrong.
enum class StatusCode {
  kOk,
  kInvalidConfig,    // an option failed validation; field() names it
  kInvalidName,      // a partition or dead-letter name failed validation
  kInvalidArgument,  // e.g. a byte range that is empty or reversed, a row with '\n'
  kNotFound,         // the named file, partition or dead letter does not exist
  kCorrupt,          // an on-disk record or a partition could not be parsed
  kIo,               // the file system refused (message names the path and errno)
  kBusy,             // another process holds the resource (the spool lock)
  kInternal,         // a bug: e.g. a Result built from an OK status
};
[[nodiscard]] std::string_view to_string(StatusCode code) noexcept;

// The outcome of an operation: kOk, or a code with the field concerned (for
// configuration errors: "url", "backpressure.ladder[1]") and a sentence for an
// operator. Default-constructed means success. Cheap to copy when OK.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, std::string field = {})
      : code_(code), message_(std::move(message)), field_(std::move(field)) {}

  // A configuration error naming `field`.
  [[nodiscard]] static Status Config(std::string field, std::string message) {
    return Status(StatusCode::kInvalidConfig, std::move(message), std::move(field));
  }

  [[nodiscard]] bool ok() const noexcept { return code_ == StatusCode::kOk; }
  [[nodiscard]] StatusCode code() const noexcept { return code_; }
  // The sentence for an operator (empty when OK).
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  // The option or field concerned, when there is one ("" otherwise).
  [[nodiscard]] const std::string& field() const noexcept { return field_; }
  // Returns a copy whose field is `prefix` + "." + field() (or `prefix` when empty):
  // how a nested Validate() names its field in the outer options.
  [[nodiscard]] Status WithFieldPrefix(std::string_view prefix) const;
  // "field: message", or just the message when there is no field; "ok" when OK.
  [[nodiscard]] std::string ToString() const;

  friend bool operator==(const Status&, const Status&) = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

// Returns Status() (OK); reads better at a return statement.
[[nodiscard]] inline Status OkStatus() { return Status(); }

namespace internal {
// Prints "fwdsink: value() on an error Result: <what>" and aborts.
[[noreturn]] void ValueOnError(const std::string& what) noexcept;
}  // namespace internal

// A value of type T, or the (non-OK) Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cvref_t<T>, Status>,
                "Result<Status> is meaningless: use Status");

 public:
  // Holds `value`. Implicit, so `return value;` works.
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  // Holds the error `status`. An OK status is a bug (there is no value): it becomes
  // kInternal, and a debug build stops here.
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    FWDSINK_DCHECK(!status_.ok());
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "Result built from an OK status");
  }

  [[nodiscard]] bool ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  // Returns the error, or OK when a value is present.
  [[nodiscard]] const Status& status() const& noexcept { return status_; }
  [[nodiscard]] Status status() && noexcept { return std::move(status_); }

  // Returns the value. Calling it on an error aborts with the error's message.
  [[nodiscard]] T& value() & {
    CheckHasValue();
    return *value_;
  }
  [[nodiscard]] const T& value() const& {
    CheckHasValue();
    return *value_;
  }
  [[nodiscard]] T&& value() && {
    CheckHasValue();
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void CheckHasValue() const {
    if (!value_) internal::ValueOnError(status_.ToString());
  }

  std::optional<T> value_;
  Status status_;  // OK exactly when value_ holds a value
};

}  // namespace fwdsink
