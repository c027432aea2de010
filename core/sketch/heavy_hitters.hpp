// Heavy-hitter candidates: a fixed-capacity set of the flows with the largest
// Count-Min estimates seen so far (the "sketch + heap" scheme of Cormode and
// Muthukrishnan). Memory is fixed by the capacity, never by traffic.
//
// Each candidate also counts, exactly, the weight offered for it since it
// entered the set (as Space-Saving counts a monitored item): a lower bound of
// its true count that no hash collision can inflate, and, with the estimate
// it entered with, an upper bound that collisions after its entry cannot
// inflate. Ranking uses both (rank_keys), so a small key that shares cells with
// a heavy one cannot outrank the keys that are really heavy.
#pragma once

#include <cstdint>
#include <vector>

#include "core/key/flow_key.hpp"
#include "core/key/hash.hpp"

namespace flowsketch::core {

class HeavyHitterCandidates {
public:
    struct Entry {
        FlowKey key;
        std::uint64_t estimate = 0;  // estimate when last offered (refresh before reporting)
        /// Weight offered since the key entered the set: never above its truth.
        std::uint64_t exact = 0;
        /// exact + the estimate before the entering weight: never below its truth.
        std::uint64_t upper = 0;
    };

    /// Throws std::invalid_argument if capacity is 0 or above 2^20.
    explicit HeavyHitterCandidates(std::uint32_t capacity);

    /// Offers a flow with its current estimate, which includes `weight`, the
    /// weight just added for it. O(1) when the estimate does not beat the
    /// smallest candidate (the common case); O(log capacity) otherwise. A key
    /// in the set always takes the slow path when weight > 0: its estimate
    /// then exceeds the one it is stored with (estimates only grow within a
    /// window), which is at least the smallest.
    void offer(const FlowKey& key, const Hash128& hash, std::uint64_t estimate, std::uint64_t weight = 0) noexcept {
        if (size_ == capacity_ && estimate <= heap_[0].estimate) return;
        offer_slow(key, hash, estimate, weight);
    }

    /// The candidates in no particular order.
    std::vector<Entry> entries() const;
    std::uint32_t size() const noexcept { return size_; }
    std::uint32_t capacity() const noexcept { return capacity_; }
    void clear() noexcept;
    std::size_t memory_bytes() const noexcept;
    /// memory_bytes() of a set of this capacity, before building it.
    static std::size_t planned_bytes(std::uint32_t capacity) noexcept;

private:
    struct HeapEntry {
        FlowKey key;
        std::uint64_t estimate;
        std::uint64_t exact;         // weight offered since entry
        std::uint64_t before_entry;  // the estimate at entry less the entering weight
        std::uint32_t slot;          // position in the index table
    };
    static constexpr std::uint32_t empty_slot = 0xffffffffu;

    // Out of line: the rare path; inlined into the per-packet loops it only
    // lengthens them.
    [[gnu::noinline]] void offer_slow(const FlowKey& key, const Hash128& hash, std::uint64_t estimate,
                                      std::uint64_t weight) noexcept;
    std::uint32_t find_slot(const FlowKey& key, std::uint64_t h) const noexcept;
    void erase_slot(std::uint32_t slot) noexcept;
    void sift_up(std::uint32_t i) noexcept;
    void sift_down(std::uint32_t i) noexcept;
    void swap_entries(std::uint32_t a, std::uint32_t b) noexcept;

    std::uint32_t capacity_;
    std::uint32_t size_ = 0;
    std::vector<HeapEntry> heap_;  // min-heap by estimate
    // Open-addressed index (linear probing, backward-shift deletion): slot →
    // heap position; the table is a power of two ≥ 2·capacity.
    std::vector<std::uint32_t> table_;
    std::vector<std::uint64_t> table_hash_;
    std::uint64_t mask_;
};

}  // namespace flowsketch::core
