// Result<T>: a value or a one-line error, returned across module boundaries.
//
// Operating errors (bad input, a held database, a failed fsync) travel as Result values so a
// caller can see from the signature what can fail. Programmer errors are assertions instead.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

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
    assert(ok());
    return std::get<T>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const std::string& error() const {
    assert(!ok());
    return std::get<Error>(state_).message;
  }

 private:
  std::variant<T, Error> state_;
};

// Result<void>: success or an error.
struct Ok {};
using Status = Result<Ok>;

inline Error make_error(std::string message) { return Error{std::move(message)}; }

}  // namespace attune
