// Counting Bloom filter (Fan, Cao, Almeida, Broder 2000; survey seed 004
// §2.5): m small counters instead of bits, so items can be deleted.
//
// Counters are packed 4 bits wide by default (16 per 64-bit word; 8 and 16
// bits are options). They saturate at 2^b − 1 and never wrap. A saturated
// counter is never decremented again: it may cost false positives later, never
// a false negative. saturated_count() reports how many there are.
//
// Overflow (survey §2.5): counter i is Binomial(nk, 1/m), so
//   P(c(i) ≥ j) ≤ C(nk, j)/m^j ≤ (e·n·k/(j·m))^j,
// and with k ≤ (ln 2)·m/n a union bound over the m counters gives
//   P(max_i c(i) ≥ j) ≤ m·(e·ln 2 / j)^j,
// which at j = 16 is ≈ 1.37·10^{−15}·m: 4-bit counters suffice.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/key/hash.hpp"
#include "core/sketch/probes.hpp"

namespace flowsketch::core {

/// m·(e·ln 2 / j)^j: bound on P(some counter ≥ j) when k ≤ (ln 2)·m/n
/// (survey §2.5). May exceed 1 for small j (then it says nothing).
double counting_overflow_bound(double m, double j) noexcept;

/// The tighter union bound before the last relaxation: m·P(Binomial(nk, 1/m) ≥ j),
/// computed exactly from the binomial tail (j ≥ 1).
double counting_overflow_binomial_bound(double m, double n, std::uint32_t k,
                                        std::uint32_t j) noexcept;

struct CountingBloomParams {
    std::uint64_t counters = 0;  ///< m
    std::uint32_t k = 0;
    std::uint32_t counter_bits = 4;  ///< 4, 8 or 16
    ProbeScheme scheme = ProbeScheme::double_hashing;
    std::uint64_t seed = 0;

    friend bool operator==(const CountingBloomParams&, const CountingBloomParams&) = default;
};

class CountingBloomFilter {
public:
    /// Throws std::invalid_argument unless 1 ≤ k ≤ max_probes,
    /// 1 ≤ counters ≤ 2^36 and counter_bits ∈ {4, 8, 16}.
    explicit CountingBloomFilter(const CountingBloomParams& params);

    const CountingBloomParams& params() const noexcept { return params_; }
    std::uint64_t size() const noexcept { return params_.counters; }
    std::uint32_t k() const noexcept { return params_.k; }
    std::uint32_t max_value() const noexcept { return max_value_; }

    /// Increments the k counters of the key (a repeated probe twice), saturating.
    void insert(const Hash128& hash) noexcept;
    /// Decrements the k counters of a key that is present. Returns false and
    /// changes nothing when the key is not present (some counter is zero).
    /// Saturated counters stay saturated.
    bool erase(const Hash128& hash) noexcept;
    /// All k counters non-zero.
    bool contains(const Hash128& hash) const noexcept;
    void positions(const Hash128& hash, std::uint64_t* out) const noexcept {
        probes_.generate(hash, out);
    }

    /// Counter-level access (for filters built on this one, e.g. the offline
    /// two-choice construction). increment saturates; decrement leaves zero
    /// and saturated counters alone. Indices must be < size().
    std::uint32_t counter(std::uint64_t index) const noexcept {
        return static_cast<std::uint32_t>(words_[index >> per_word_log_] >>
                                          ((index & per_word_mask_) << bits_log_)) &
               max_value_;
    }
    void increment(std::uint64_t index) noexcept;
    void decrement(std::uint64_t index) noexcept;

    std::uint64_t saturated_count() const noexcept;
    std::uint64_t nonzero_count() const noexcept;
    std::uint32_t max_counter() const noexcept;
    /// (non-zero fraction)^k: the false-positive rate the filter shows.
    double observed_false_positive_rate() const noexcept;

    std::span<const std::uint64_t> words() const noexcept { return words_; }
    /// For deserialisation: raw packed words (counters past m must stay zero).
    std::span<std::uint64_t> mutable_words() noexcept { return words_; }
    std::size_t memory_bytes() const noexcept {
        return sizeof(*this) + words_.capacity() * sizeof(std::uint64_t);
    }

private:
    CountingBloomParams params_;
    ProbeGenerator probes_;
    std::uint32_t bits_log_ = 2;      // log2(counter_bits)
    std::uint32_t per_word_log_ = 4;  // log2(64 / counter_bits)
    std::uint64_t per_word_mask_ = 15;
    std::uint32_t max_value_ = 15;
    std::vector<std::uint64_t> words_;
};

}  // namespace flowsketch::core
