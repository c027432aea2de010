// Primality by trial division: the sketches size their rows to primes (the
// Kirsch–Mitzenmacher columns need a prime width), once per construction.
#pragma once

#include <cstdint>

namespace flowsketch::core {

constexpr bool is_prime(std::uint64_t n) noexcept {
    if (n < 2) return false;
    if (n % 2 == 0) return n == 2;
    for (std::uint64_t d = 3; d <= n / d; d += 2) {
        if (n % d == 0) return false;
    }
    return true;
}

}  // namespace flowsketch::core
