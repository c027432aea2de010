#include "core/sketch/hyperloglog.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace flowsketch::core {
namespace hll {

double estimate(std::uint64_t scaled_sum, std::uint32_t zeros, std::uint32_t registers) noexcept {
    const double m = static_cast<double>(registers);
    const double alpha = registers <= 16 ? 0.673 : registers <= 32 ? 0.697 : registers <= 64 ? 0.709
                                                                                                : 0.7213 / (1.0 + 1.079 / m);
    const double sum = std::ldexp(static_cast<double>(scaled_sum), -static_cast<int>(max_rank));
    const double raw = alpha * m * m / sum;
    if (raw <= 2.5 * m && zeros != 0) return m * std::log(m / static_cast<double>(zeros));
    return raw;
}

double relative_error(std::uint32_t registers) noexcept { return 1.04 / std::sqrt(static_cast<double>(registers)); }

}  // namespace hll

HyperLogLog::HyperLogLog(std::uint32_t bits) : bits_(bits), zeros_(0), scaled_sum_(0) {
    if (bits < 4 || bits > 16) throw std::invalid_argument("HyperLogLog: between 2^4 and 2^16 registers");
    registers_.assign(std::size_t{1} << bits, 0);
    recount();
}

void HyperLogLog::merge(const HyperLogLog& other) {
    if (other.bits_ != bits_) throw std::invalid_argument("HyperLogLog: merging counters of different sizes");
    for (std::size_t i = 0; i < registers_.size(); ++i) registers_[i] = std::max(registers_[i], other.registers_[i]);
    recount();
}

void HyperLogLog::assign(std::span<const std::uint8_t> values) {
    if (values.size() != registers_.size()) throw std::invalid_argument("HyperLogLog: wrong number of registers");
    if (std::any_of(values.begin(), values.end(), [](std::uint8_t v) { return v > hll::max_rank; })) {
        throw std::invalid_argument("HyperLogLog: a register above the highest rank");
    }
    std::copy(values.begin(), values.end(), registers_.begin());
    recount();
}

void HyperLogLog::clear() noexcept {
    std::fill(registers_.begin(), registers_.end(), std::uint8_t{0});
    recount();
}

void HyperLogLog::recount() noexcept {
    zeros_ = 0;
    scaled_sum_ = 0;
    for (const std::uint8_t reg : registers_) {
        zeros_ += reg == 0 ? 1 : 0;
        scaled_sum_ += hll::scaled_term(reg);
    }
}

}  // namespace flowsketch::core
