// The 4-bit stamp cells every seen filter kind stores, and the clock that
// turns a stamp into an age. A cell holds the stamp (1..15, cycling) of the
// newest generation in which some flow probed it, 0 for none in the live
// window; the kinds differ only in where a flow's probes fall.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/sketch/random.hpp"  // UInt128

/// For functions whose only effect is a prefetch: GCC deems them pure and
/// deletes a call to one that it did not inline.
#define FLOWSKETCH_PREFETCH [[gnu::always_inline]] inline

namespace flowsketch::core::lifecycle {

inline constexpr std::uint64_t nibble_ones = 0x1111111111111111ULL;
inline constexpr std::uint32_t stamp_cycle = 15;  // non-zero values of a 4-bit cell
inline constexpr std::uint8_t dead = 0xff;        // the age of an empty cell

/// SplitMix64 finaliser (a bijection): remixes a hash word for a further probe group.
inline std::uint64_t mix64(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// ⌊x·r / 2^64⌋: x reduced to [0, r) by a multiply (Lemire), no division.
inline std::uint64_t reduce(std::uint64_t x, std::uint64_t r) noexcept {
    return static_cast<std::uint64_t>((static_cast<UInt128>(x) * r) >> 64);
}

/// The low bit of each non-zero nibble of x.
inline std::uint64_t nonzero_nibbles(std::uint64_t x) noexcept {
    return (x | x >> 1 | x >> 2 | x >> 3) & nibble_ones;
}

/// Sum of the nibbles of x when each is at most 8 (a sum of up to 8 nibble
/// masks). By bytes: std::popcount without the POPCNT instruction (not in the
/// x86-64 baseline) is a library call.
inline std::uint32_t sum_of_nibbles(std::uint64_t x) noexcept {
    constexpr std::uint64_t byte_low_nibbles = 0x0f0f0f0f0f0f0f0fULL;
    constexpr std::uint64_t byte_ones = 0x0101010101010101ULL;
    const std::uint64_t per_byte = (x & byte_low_nibbles) + (x >> 4 & byte_low_nibbles);
    return static_cast<std::uint32_t>((per_byte * byte_ones) >> 56);
}

/// Per word: the low bit of each nibble equal to `stamp` (SWAR: a nibble
/// equals the stamp iff the nibble of word ^ pattern is zero).
inline std::uint64_t nibbles_equal(std::uint64_t word, std::uint32_t stamp) noexcept {
    return ~nonzero_nibbles(word ^ (nibble_ones * stamp)) & nibble_ones;
}

/// Cell i of an array of 16 cells per word.
inline std::uint32_t stamp_cell(const std::uint64_t* words, std::uint64_t i) noexcept {
    return static_cast<std::uint32_t>(words[i >> 4] >> ((i & 15) << 2)) & 15u;
}

/// Generations as stamps: which stamp is current, the age (0..G) of each
/// stamp in the live window, and which stamps some cell may still hold.
class GenerationClock {
public:
    explicit GenerationClock(std::uint32_t generations) noexcept : live_(generations + 1) {
        restamp();
    }

    std::uint32_t live() const noexcept { return live_; }  // G + 1
    std::uint32_t current() const noexcept { return cur_stamp_; }
    /// Age of a cell's stamp: 0 current .. G, dead for 0 or a stamp outside the window.
    std::uint32_t age_of(std::uint32_t stamp) const noexcept { return age_of_[stamp]; }
    std::uint32_t stamp_at_age(std::uint32_t age) const noexcept { return stamp_at_age_[age]; }
    /// The stamp the next boundary takes out of the window (age G).
    std::uint32_t leaving() const noexcept { return stamp_at_age_[live_ - 1]; }

    /// Some cell may now hold the current stamp.
    void note_write() noexcept { written_ |= 1u << cur_stamp_; }
    /// Whether some cell may hold `stamp`: a generation that wrote none needs no clearing pass.
    bool wrote(std::uint32_t stamp) const noexcept { return (written_ & (1u << stamp)) != 0; }
    void forget(std::uint32_t stamp) noexcept { written_ &= ~(1u << stamp); }

    /// One boundary: everything ages by one; the new current stamp is free
    /// (cleared when it left).
    void step() noexcept {
        cur_stamp_ = cur_stamp_ % stamp_cycle + 1;
        for (std::uint32_t age = 15; age > 0; --age) stamp_at_age_[age] = stamp_at_age_[age - 1];
        stamp_at_age_[0] = static_cast<std::uint8_t>(cur_stamp_);
        index_ages();
    }
    /// `boundaries` boundaries after every cell was cleared: the stamp
    /// sequence goes on as if each had been crossed.
    void skip(std::uint64_t boundaries) noexcept {
        written_ = 0;
        const std::uint32_t steps = static_cast<std::uint32_t>(boundaries % stamp_cycle);
        cur_stamp_ = (cur_stamp_ - 1 + steps) % stamp_cycle + 1;
        restamp();
    }

private:
    void restamp() noexcept {
        for (std::uint32_t age = 0; age < 16; ++age) {
            // stamp(age) = cur − age on the cycle 1..15.
            stamp_at_age_[age] = static_cast<std::uint8_t>(
                (cur_stamp_ - 1 + stamp_cycle - age % stamp_cycle) % stamp_cycle + 1);
        }
        index_ages();
    }
    void index_ages() noexcept {
        age_of_.fill(dead);
        for (std::uint32_t age = 0; age < live_; ++age) {
            age_of_[stamp_at_age_[age]] = static_cast<std::uint8_t>(age);
        }
    }

    std::uint32_t live_;
    std::uint32_t cur_stamp_ = 1;
    std::uint32_t written_ = 0;                    // bit s: some cell may hold stamp s
    std::array<std::uint8_t, 16> age_of_{};        // stamp → age (0..G) or dead
    std::array<std::uint8_t, 16> stamp_at_age_{};  // age 0..15 → stamp
};

/// What a group of probes found: its oldest cell's age (dead if one is
/// empty) and its empty cells.
struct CellScan {
    std::uint32_t max_age = 0;
    std::uint32_t zeros = 0;
};

inline CellScan scan_cells(const std::uint64_t* words, const std::uint64_t* pos, std::uint32_t k,
                           const GenerationClock& clock) noexcept {
    CellScan s;
    for (std::uint32_t i = 0; i < k; ++i) {
        const std::uint32_t c = stamp_cell(words, pos[i]);
        s.zeros += c == 0 ? 1u : 0u;
        s.max_age = std::max<std::uint32_t>(s.max_age, clock.age_of(c));
    }
    return s;
}

}  // namespace flowsketch::core::lifecycle
