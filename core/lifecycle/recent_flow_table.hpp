// Flows refreshed in the current generation, by hash (direct-mapped). Such a
// flow's cells all hold the current stamp until the next boundary (other
// packets only write that stamp; only a boundary clears), so its next packets
// change nothing: the lifecycle answers them from here, without the k cell
// reads. Exact: entries match on the whole 128-bit hash, from which the
// probes are derived, and every boundary empties the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/key/hash.hpp"

namespace flowsketch::core::lifecycle {

class RecentFlowTable {
public:
    /// 16 bytes, so an entry never straddles two cache lines.
    struct Entry {
        std::uint64_t h1 = 0;
        std::uint64_t h2 = 0;
    };
    static constexpr std::size_t slots = std::size_t{1} << 15;

    /// Disabled: two slots that are never written (the lookups stay branch-free).
    explicit RecentFlowTable(bool enabled)
        : entries_(enabled ? slots : 2), mask_(entries_.size() - 1) {
        clear();
    }

    const Entry& slot(const Hash128& hash) const noexcept { return entries_[hash.h1 & mask_]; }
    bool contains(const Hash128& hash) const noexcept {
        const Entry& e = slot(hash);
        return e.h1 == hash.h1 && e.h2 == hash.h2;
    }
    void insert(const Hash128& hash) noexcept {
        entries_[hash.h1 & mask_] = Entry{hash.h1, hash.h2};
    }
    /// An empty slot i holds h1 = i ^ 1: a flow in slot i has h1 & mask = i, so
    /// it never matches (the mask has at least one bit: two slots at least).
    void clear() noexcept {
        for (std::size_t i = 0; i < entries_.size(); ++i) entries_[i] = Entry{i ^ 1, 0};
    }

    static std::size_t planned_bytes(bool enabled) noexcept {
        return (enabled ? slots : 2) * sizeof(Entry);
    }
    std::size_t memory_bytes() const noexcept { return entries_.capacity() * sizeof(Entry); }

private:
    std::vector<Entry> entries_;
    std::uint64_t mask_;
};

}  // namespace flowsketch::core::lifecycle
