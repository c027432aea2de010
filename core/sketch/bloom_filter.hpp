// Bloom filter (Bloom 1970), standard and partitioned, over the probe schemes
// of core/sketch/probes.hpp. Formulas from Broder–Mitzenmacher's survey (seed 004,
// §2.1–2.4) and Kirsch–Mitzenmacher (seed 000, §2 and §5).
//
// Notation: m bits, k probes, n inserted items, ρ the fraction of ones.
//  - false-positive probability f = (1 − e^{−kn/m})^k, minimised over real k
//    at k = (m/n)·ln 2, where f = 2^{−k} ≈ 0.6185^{m/n};
//  - with a filter in hand: f_observed = ρ^k (partitioned: ∏ ρ_i over parts);
//  - cardinality from the zero bits Z: n̂ = ln(Z/m) / (k·ln(1 − 1/m));
//  - standard layout: all k probes range over the m bits; partitioned layout:
//    k parts of m' = m/k bits, probe i lands in part i (KM §5.1).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/key/hash.hpp"
#include "core/sketch/probes.hpp"

namespace flowsketch::core {

enum class BloomLayout : std::uint8_t { standard = 0, partitioned = 1 };

/// f = (1 − e^{−k·n/m})^k (survey §2.1). m > 0, k ≥ 1.
double bloom_false_positive_rate(double m, double n, std::uint32_t k) noexcept;

/// The integer k minimising bloom_false_positive_rate(m, n, k): the better of
/// ⌊(m/n)·ln 2⌋ and ⌈(m/n)·ln 2⌉ (KM §8), at least 1, at most max_probes.
std::uint32_t bloom_optimal_k(double m, double n) noexcept;

/// Lower bound on the bits of any set representation with false-positive rate
/// ε and no false negatives: n·log2(1/ε) (survey §2.2).
double bloom_lower_bound_bits(double n, double epsilon) noexcept;

/// m / (n·log2(1/ε)); an optimally configured Bloom filter sits near
/// log2 e ≈ 1.44 (survey §2.2).
double bloom_space_ratio(double m, double n, double epsilon) noexcept;

struct BloomParams {
    std::uint64_t bits = 0;  ///< m, the total number of bits
    std::uint32_t k = 0;     ///< probes per key
    ProbeScheme scheme = ProbeScheme::double_hashing;
    BloomLayout layout = BloomLayout::standard;
    std::uint64_t seed = 0;

    /// Sizing for n items at target rate δ (lecture notes 002): k = ⌈log2(1/δ)⌉,
    /// m = ⌈n·k / ln 2⌉ (rounded up to a multiple of k for the partitioned
    /// layout). Throws std::invalid_argument unless n ≥ 1 and 0 < δ < 1.
    static BloomParams for_rate(std::uint64_t n, double rate,
                                ProbeScheme scheme = ProbeScheme::double_hashing,
                                BloomLayout layout = BloomLayout::standard,
                                std::uint64_t seed = 0);

    friend bool operator==(const BloomParams&, const BloomParams&) = default;
};

class BloomFilter {
public:
    /// Throws std::invalid_argument unless 1 ≤ k ≤ max_probes, 1 ≤ bits ≤ 2^40,
    /// and (partitioned) bits is a multiple of k.
    explicit BloomFilter(const BloomParams& params);

    const BloomParams& params() const noexcept { return params_; }
    std::uint64_t bits() const noexcept { return params_.bits; }
    std::uint32_t k() const noexcept { return params_.k; }

    void insert(const Hash128& hash) noexcept;
    /// True for every inserted key; for other keys with probability ≈ f.
    bool contains(const Hash128& hash) const noexcept;
    /// Writes the k bit positions of `hash` (after the partition offset).
    void positions(const Hash128& hash, std::uint64_t* out) const noexcept;

    /// Number of insert() calls (duplicates included) — n in the formulas.
    std::uint64_t insertions() const noexcept { return insertions_; }
    std::uint64_t count_ones() const noexcept;
    double fill_ratio() const noexcept;

    /// Formula: (1 − e^{−k·n/m})^k with n = insertions().
    double formula_false_positive_rate() const noexcept;
    /// From the filter itself: ρ^k, or ∏ ρ_i over the parts when partitioned.
    double observed_false_positive_rate() const noexcept;
    /// n̂ = ln(Z/m) / ln(P(a bit survives one item)), where that probability is
    /// (1 − 1/m)^k (standard) or 1 − 1/m' (partitioned, m' = m/k). +∞ if Z = 0.
    double estimate_cardinality() const noexcept;
    /// m / (n·log2(1/ε)) with n = insertions() and ε = observed rate.
    double space_ratio_to_lower_bound() const noexcept;

    /// OR of the bit vectors: the filter of the union (survey §2.4). Throws
    /// std::invalid_argument if the parameters differ or other is *this.
    void union_with(const BloomFilter& other);
    /// Halves a standard filter whose size is a power of two by OR-ing the two
    /// halves (survey §2.4); probes keep working because they are masked.
    /// Throws std::invalid_argument for the partitioned layout, a size that is
    /// not a power of two, or a filter of 1 bit.
    void halve();

    /// |S1 ∩ S2| from the zeros Z1, Z2 of each filter and Z∪ of their OR
    /// (survey §2.4, re-derived; the seed text prints it without the factor m):
    /// E[Z∪]/m = q^{|S1|+|S2|−|S1∩S2|} with q = P(a bit survives one item), and
    /// Z_i/m ≈ q^{|S_i|}, so q^{−|S1∩S2|} = m·Z∪/(Z1·Z2) and
    /// |S1 ∩ S2| = ln(m·Z∪/(Z1·Z2)) / (−ln q), clamped at 0. Throws
    /// std::invalid_argument if the parameters differ. +∞ if a filter is full.
    static double estimate_intersection(const BloomFilter& a, const BloomFilter& b);

    std::span<const std::uint64_t> words() const noexcept { return words_; }
    /// For deserialisation: raw words (bits past m must stay zero) and count.
    std::span<std::uint64_t> mutable_words() noexcept { return words_; }
    void set_insertions(std::uint64_t n) noexcept { insertions_ = n; }
    std::size_t memory_bytes() const noexcept {
        return sizeof(*this) + words_.capacity() * sizeof(std::uint64_t);
    }

private:
    double log_survival_per_item() const noexcept;
    static std::uint64_t zeros_of(std::span<const std::uint64_t> words, std::uint64_t bits) noexcept;
    void check_compatible(const BloomFilter& other, const char* what) const;

    BloomParams params_;
    std::uint64_t part_bits_ = 0;  // m' (partitioned) or m (standard)
    ProbeGenerator probes_;
    std::uint64_t insertions_ = 0;
    std::vector<std::uint64_t> words_;
};

}  // namespace flowsketch::core
