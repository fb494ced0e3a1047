// Checks for bugs and broken invariants (not for faults of the world, which
// are typed exceptions: see fabric/errors.h).
//
// A failed check throws murmur::InvariantError whose message holds the
// expression, both operands and file:line, in the manner of GLOO_ENFORCE_EQ.
// Throwing rather than aborting lets a progress thread hand the failure to the
// waiting caller as an exception_ptr.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace murmur {

class InvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
[[noreturn]] inline void check_failed(const char* file, int line, const std::string& what) {
  std::ostringstream os;
  os << file << ":" << line << ": check failed: " << what;
  throw InvariantError(os.str());
}

template <typename A, typename B>
std::string describe_operands(const char* expr, const A& a, const B& b) {
  std::ostringstream os;
  os << expr << " (" << a << " vs. " << b << ")";
  return os.str();
}
}  // namespace detail

}  // namespace murmur

#define MURMUR_CHECK(cond)                                                  \
  do {                                                                      \
    if (!(cond)) ::murmur::detail::check_failed(__FILE__, __LINE__, #cond); \
  } while (0)

#define MURMUR_CHECK_OP_(a, b, op)                                                                                  \
  do {                                                                                                              \
    const auto& murmur_a_ = (a);                                                                                    \
    const auto& murmur_b_ = (b);                                                                                    \
    if (!(murmur_a_ op murmur_b_))                                                                                  \
      ::murmur::detail::check_failed(__FILE__, __LINE__,                                                            \
                                     ::murmur::detail::describe_operands(#a " " #op " " #b, murmur_a_, murmur_b_)); \
  } while (0)

#define MURMUR_CHECK_EQ(a, b) MURMUR_CHECK_OP_(a, b, ==)
#define MURMUR_CHECK_NE(a, b) MURMUR_CHECK_OP_(a, b, !=)
#define MURMUR_CHECK_LT(a, b) MURMUR_CHECK_OP_(a, b, <)
#define MURMUR_CHECK_LE(a, b) MURMUR_CHECK_OP_(a, b, <=)
#define MURMUR_CHECK_GT(a, b) MURMUR_CHECK_OP_(a, b, >)
#define MURMUR_CHECK_GE(a, b) MURMUR_CHECK_OP_(a, b, >=)
