// Result<T>: a value or a one-line error, returned across module boundaries.
//
// Operating errors (bad input, a held database, a failed fsync) travel as Result values so a
// caller can see from the signature what can fail. Programmer errors are assertions instead.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "events/assert.h"

namespace attune {

struct Error {
  std::string message;  // one line: what went wrong and where
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & {
    ATTUNE_ASSERT(ok(), error_of_value());
    return std::get<T>(state_);
  }
  const T& value() const& {
    ATTUNE_ASSERT(ok(), error_of_value());
    return std::get<T>(state_);
  }
  T&& value() && {
    ATTUNE_ASSERT(ok(), error_of_value());
    return std::get<T>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const std::string& error() const {
    ATTUNE_ASSERT(!ok(), "error() of a Result that holds a value");
    return std::get<Error>(state_).message;
  }

 private:
  // What value() of an error says: the error it holds (the caller forgot to check).
  std::string_view error_of_value() const {
    const Error* error = std::get_if<Error>(&state_);
    return error == nullptr ? std::string_view() : std::string_view(error->message);
  }

  std::variant<T, Error> state_;
};

// Result<void>: success or an error.
struct Ok {};
using Status = Result<Ok>;

inline Error make_error(std::string message) { return Error{std::move(message)}; }

}  // namespace attune
