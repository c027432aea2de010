// Whether the tests run under a sanitizer (the CMake options FLOWSKETCH_SANITIZE
// and FLOWSKETCH_SANITIZE_THREAD). There, tests that repeat one check over many
// inputs for statistical power or exhaustiveness run a subset: the optimised
// build runs them whole, and the sanitizers look for memory and thread errors,
// which the subset reaches as well at a tenth of the time.
#pragma once

namespace flowsketch::testing {

#ifdef FLOWSKETCH_SANITIZED
inline constexpr bool sanitized_build = true;
#else
inline constexpr bool sanitized_build = false;
#endif

}  // namespace flowsketch::testing
