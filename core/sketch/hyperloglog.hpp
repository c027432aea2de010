// HyperLogLog (Flajolet, Fusy, Gandouet, Meunier, AofA 2007): the number of
// distinct items of a stream in m one-byte registers, with a relative standard
// error of about 1.04/√m. Registers merge by maximum, so the union of two
// streams is exact to compute from their counters.
//
// The sum Σ 2^−M[j] that the estimate needs is kept as it changes, as an
// integer (2^(50 − M[j]) each): an estimate costs O(1) and two counters with
// the same registers give the same estimate, whichever way they were built.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace flowsketch::core {

namespace hll {

/// Ranks are capped here: a higher rank has probability 2^−50 per item and
/// changes no estimate this tool reports.
inline constexpr std::uint8_t max_rank = 50;

/// The register (top `bits` bits) and the rank (leading zeros of the rest, plus
/// one) of a 64-bit hash.
struct Position {
    std::uint32_t index;
    std::uint8_t rank;
};
inline Position position(std::uint64_t hash, std::uint32_t bits) noexcept {
    const std::uint64_t rest = hash << bits;
    const int zeros = rest == 0 ? 64 - static_cast<int>(bits) : std::countl_zero(rest);
    const int rank = zeros + 1 > max_rank ? max_rank : zeros + 1;
    return {static_cast<std::uint32_t>(hash >> (64 - bits)), static_cast<std::uint8_t>(rank)};
}

/// 2^(max_rank − rank): one register's share of the scaled sum.
inline std::uint64_t scaled_term(std::uint8_t rank) noexcept { return std::uint64_t{1} << (max_rank - rank); }

/// The estimate of m registers whose scaled sum and count of zero registers
/// are given: the raw estimate α·m²/Σ2^−M, or linear counting m·ln(m/V)
/// below 2.5·m while some register is zero (the original paper's corrections;
/// a 64-bit hash needs no large-range one).
double estimate(std::uint64_t scaled_sum, std::uint32_t zeros, std::uint32_t registers) noexcept;

/// 1.04/√m: the relative standard error of an estimate from m registers.
double relative_error(std::uint32_t registers) noexcept;

}  // namespace hll

class HyperLogLog {
public:
    /// 2^bits registers, 4 ≤ bits ≤ 16; throws std::invalid_argument otherwise.
    explicit HyperLogLog(std::uint32_t bits = 12);

    /// Counts the item whose 64-bit hash is given; true when a register rose.
    bool add(std::uint64_t hash) noexcept {
        const hll::Position p = hll::position(hash, bits_);
        std::uint8_t& reg = registers_[p.index];
        if (p.rank <= reg) return false;
        scaled_sum_ -= hll::scaled_term(reg);
        scaled_sum_ += hll::scaled_term(p.rank);
        zeros_ -= reg == 0 ? 1 : 0;
        reg = p.rank;
        return true;
    }

    double estimate() const noexcept { return hll::estimate(scaled_sum_, zeros_, registers()); }
    double relative_error() const noexcept { return hll::relative_error(registers()); }
    std::uint32_t registers() const noexcept { return std::uint32_t{1} << bits_; }
    std::uint32_t bits() const noexcept { return bits_; }
    std::span<const std::uint8_t> register_values() const noexcept { return registers_; }

    /// The union: each register the larger of the two. Throws
    /// std::invalid_argument when the register counts differ.
    void merge(const HyperLogLog& other);
    /// Sets the registers (a deserialised counter); throws on a size mismatch
    /// or a rank above max_rank.
    void assign(std::span<const std::uint8_t> values);
    void clear() noexcept;
    std::size_t memory_bytes() const noexcept { return sizeof(*this) + registers_.capacity(); }

private:
    void recount() noexcept;

    std::uint32_t bits_;
    std::uint32_t zeros_;
    std::uint64_t scaled_sum_;
    std::vector<std::uint8_t> registers_;
};

}  // namespace flowsketch::core
