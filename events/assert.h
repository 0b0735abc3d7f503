// ATTUNE_ASSERT: invariants that hold in every build, the one users run included.
//
// An assertion states what the code's own logic guarantees: a chain that links, sequence numbers
// that only increase, budget accounts that never go negative, a run charged once, an event that
// decodes to what was encoded. When one fails, the program is wrong, and it stops at once with
// the file, the line, the condition and what it means, instead of writing a ledger that lies.
// NDEBUG does not silence it: TigerBeetle ships its assertions, and so does attune.
//
// Operating errors (bad input, a dead node, a full disk) are never assertions: they travel as
// Result values (events/result.h) and end in a one-line error.
#pragma once

#include <string_view>

namespace attune {

// Prints "attune: invariant broken at FILE:LINE: CONDITION (WHAT)" to stderr and aborts.
[[noreturn]] void assertion_failed(const char* condition, std::string_view what, const char* file,
                                   int line) noexcept;

}  // namespace attune

// `what` says what the invariant means, in a few words (a string literal or a std::string).
#define ATTUNE_ASSERT(condition, what) \
  (static_cast<bool>(condition)        \
       ? static_cast<void>(0)          \
       : ::attune::assertion_failed(#condition, (what), __FILE__, __LINE__))
