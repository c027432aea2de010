// Distinct counts per key: a Count-Min sketch whose cells are HyperLogLog
// counters (Cormode and Muthukrishnan's sketch, J. Algorithms 2005, with
// Flajolet et al.'s counters, AofA 2007). A (key, item) pair is counted in
// the cell of each row that the key hashes to; the cell's counter then holds
// the key's distinct items and those of the keys it shares the cell with, so
// the smallest row is the estimate, as in Count-Min. Counters merge by
// register maximum: sketches of the same dimensions and seed merge exactly.
//
// Bounds, for a key with n distinct items, D distinct pairs in all, σ the
// counters' relative standard error and t = 3 (HyperLogLog's error taken as
// normal, as its authors do):
//   n ≤ estimate / (1 − tσ)            (no row's counter is low by more than tσ)
//   n ≥ estimate / (1 + tσ) − ε·D⁺     (some row holds at most ε·D others'
//                                       pairs, Count-Min's guarantee; D⁺ the
//                                       upper bound of the total)
// each failing with probability at most δ_CM + (depth + 2)·0.00135.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/key/hash.hpp"
#include "core/sketch/hyperloglog.hpp"

namespace flowsketch::core {

struct DistinctSketchParams {
    std::uint32_t width = 1091;  // prime: the Kirsch–Mitzenmacher columns need it
    std::uint32_t depth = 4;
    std::uint32_t register_bits = 8;  // 256 registers per cell: σ ≈ 6.5%
    double epsilon = 0.01;            // the additive error factor stated for (width, depth)

    /// Count-Min's failure probability at (epsilon, width, depth).
    double count_min_delta() const noexcept;
    /// Probability that a bound does not hold (see the file comment).
    double delta() const noexcept;
    std::uint64_t cells() const noexcept { return std::uint64_t{width} * depth; }
    std::uint64_t planned_bytes() const noexcept;
    friend bool operator==(const DistinctSketchParams&, const DistinctSketchParams&) = default;
};

struct DistinctBounds {
    double estimate = 0;
    double lower = 0;
    double upper = 0;
};

/// The pair hash of a key's hash and an item's: what a counter sees.
inline std::uint64_t pair_hash(const Hash128& key, std::uint64_t item) noexcept {
    return fmix64(key.h1 ^ (item * 0x9e3779b97f4a7c15ULL) ^ (key.h2 << 1));
}

class DistinctSketch {
public:
    static constexpr double t = 3.0;
    /// The HyperLogLog of every pair (the total D): 2^12 registers.
    static constexpr std::uint32_t total_register_bits = 12;

    /// Throws std::invalid_argument on a width that is not a prime ≥ 3, a
    /// depth of 0 or above 16, or register bits outside 4..12.
    explicit DistinctSketch(const DistinctSketchParams& params = {});

    /// Counts the pair of `pair` (pair_hash of the key's hash and the item's)
    /// for the key of `key`. When a register of the key's cells rose, the
    /// key's estimate may have grown: it is returned, from the columns just
    /// located; otherwise nothing.
    std::optional<double> add(const Hash128& key, std::uint64_t pair) noexcept;

    /// The key's estimate: the smallest of its cells' counters.
    double estimate(const Hash128& key) const noexcept;
    /// The estimate with its bounds (see the file comment).
    DistinctBounds bounds(const Hash128& key) const noexcept;
    /// Distinct pairs counted in all (its own HyperLogLog of 2^12 registers),
    /// with its bounds at t standard errors.
    DistinctBounds total() const noexcept;

    const DistinctSketchParams& params() const noexcept { return params_; }
    /// Union with a sketch of the same parameters; throws std::invalid_argument otherwise.
    void merge(const DistinctSketch& other);
    void clear() noexcept;
    std::size_t memory_bytes() const noexcept;

    /// Every register, cell by cell (row-major), then the total's: the
    /// serialised form's payload.
    std::vector<std::uint8_t> register_bytes() const;
    /// Sets every register from register_bytes() of a sketch of these parameters.
    void assign_registers(const std::vector<std::uint8_t>& bytes);

private:
    void columns(const Hash128& key, std::uint32_t* out) const noexcept;
    double estimate_at(const std::uint32_t* columns) const noexcept;
    void recount() noexcept;

    DistinctSketchParams params_;
    std::uint32_t registers_per_cell_;
    std::vector<std::uint8_t> registers_;  // cell-major: cell c's registers at c·m
    std::vector<std::uint64_t> scaled_sums_;
    std::vector<std::uint16_t> zeros_;
    HyperLogLog total_;
};

}  // namespace flowsketch::core
