// The standard and two-choice filters' table: m stamp cells, m prime, and a
// group of k probes by double hashing modulo m without division:
// a = ⌊h1·m/2^64⌋, b = 1 + ⌊h2·(m−1)/2^64⌋ ∈ [1, m), g_i = a + i·b mod m.
// Every b is a unit mod the prime m, so the k < m probes are distinct and
// P(cell j is probed) = k/m.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/key/hash.hpp"
#include "core/lifecycle/stamps.hpp"
#include "core/platform/cache_aligned.hpp"

namespace flowsketch::core::lifecycle {

class DoubleHashedCells {
public:
    /// Where a group's probes fall, located from its hash when needed (a
    /// multiply or two) rather than stored.
    struct Probes {
        std::uint64_t first = 0;  // g_0
        std::uint64_t step = 0;   // g_{i+1} − g_i mod m
    };

    DoubleHashedCells(std::uint64_t cells, std::uint32_t k, std::uint64_t seed1,
                      std::uint64_t seed2)
        : m_(cells),
          k_(k),
          seed1_(seed1),
          seed2_(seed2),
          words_(static_cast<std::size_t>((cells + 15) / 16), 0) {}

    Probes locate(const Hash128& hash) const noexcept {
        return Probes{reduce(hash.h1 ^ seed1_, m_), 1 + reduce(hash.h2 ^ seed2_, m_ - 1)};
    }
    void generate(const Probes& probes, std::uint64_t* out) const noexcept {
        std::uint64_t g = probes.first;
        for (std::uint32_t i = 0; i < k_; ++i) {
            out[i] = g;
            g += probes.step;  // < 2m ≤ 2^37: no overflow
            if (g >= m_) g -= m_;
        }
    }
    void generate(const Hash128& hash, std::uint64_t* out) const noexcept {
        generate(locate(hash), out);
    }
    /// The group's k lines.
    FLOWSKETCH_PREFETCH void prefetch(const Probes& probes) const noexcept {
        std::uint64_t g = probes.first;
        for (std::uint32_t i = 0; i < k_; ++i) {
            __builtin_prefetch(&words_[g >> 4], 1, 3);
            g += probes.step;
            if (g >= m_) g -= m_;
        }
    }
    /// The k lines of `hash`'s group, unless the flow is recent (then no
    /// refresh follows): located before the table is asked, so the two overlap.
    template <class Recent>
    FLOWSKETCH_PREFETCH void prefetch_unless_recent(const Hash128& hash, const Recent& recent) const noexcept {
        const Probes probes = locate(hash);
        if (recent.contains(hash)) return;
        prefetch(probes);
    }
    CellScan scan(const std::uint64_t* pos, const GenerationClock& clock) const noexcept {
        return scan_cells(words_.data(), pos, k_, clock);
    }
    /// Writes `stamp` into the group's cells, `zeros` of which were empty (the probes are
    /// distinct).
    void write(const std::uint64_t* pos, std::uint64_t stamp, std::uint32_t zeros) noexcept {
        for (std::uint32_t i = 0; i < k_; ++i) {
            const std::uint32_t shift = static_cast<std::uint32_t>((pos[i] & 15) << 2);
            std::uint64_t& word = words_[pos[i] >> 4];
            word = (word & ~(std::uint64_t{15} << shift)) | (stamp << shift);
        }
        nonzero_ += zeros;
    }
    /// One SWAR pass over the words, 16 cells at a time.
    std::uint64_t clear_stamp(std::uint32_t stamp) noexcept {
        std::uint64_t cleared = 0;
        for (std::uint64_t& word : words_) {
            const std::uint64_t equal = nibbles_equal(word, stamp);
            cleared += sum_of_nibbles(equal);
            word &= ~(equal * 15);
        }
        nonzero_ -= cleared;
        return cleared;
    }
    void clear_all() noexcept {
        std::fill(words_.begin(), words_.end(), 0);
        nonzero_ = 0;
    }

    std::uint64_t cells() const noexcept { return m_; }
    std::uint32_t k() const noexcept { return k_; }
    std::uint64_t nonzero() const noexcept { return nonzero_; }
    std::size_t memory_bytes() const noexcept { return words_.capacity() * sizeof(std::uint64_t); }

private:
    std::uint64_t m_;
    std::uint32_t k_;
    std::uint64_t seed1_, seed2_;
    CacheAlignedVector<std::uint64_t> words_;  // 16 cells of 4 bits per word
    std::uint64_t nonzero_ = 0;
};

}  // namespace flowsketch::core::lifecycle
