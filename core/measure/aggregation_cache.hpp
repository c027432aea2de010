// A small direct-mapped cache that sums the packets and bytes of recently seen
// flows before they reach the Count-Min sketch (pre-aggregation, as in a
// NetFlow flow cache, but of fixed size and without timeouts).
//
// Why it is exact: the standard Count-Min update only adds, so adding a flow's
// sum once leaves the very counters that adding its packets one by one would.
// (The conservative update is not additive: with it the sketch stays a valid
// conservative-update sketch of the same stream, each estimate still at least
// the truth and at most the standard one, but cells can differ.)
//
// Why it is fast: in a skewed mix most packets belong to a few thousand flows;
// each of those packets now touches one 64-byte line that stays in the L2
// cache instead of `depth` sketch cells spread over the sketch, and offers its
// flow to the heavy-hitter candidates once per eviction instead of per packet.
// FlowMeasurement also sends only an entry's first packet to the flow
// lifecycle (add() says which packets start an entry).
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "core/platform/cache_aligned.hpp"
#include "core/key/flow_key.hpp"
#include "core/key/hash.hpp"

namespace flowsketch::core {

class AggregationCache {
public:
    /// One flow's packets and bytes not yet in the sketch.
    struct Entry {
        FlowKey key;
        Hash128 hash;
        std::uint32_t packets = 0;  // 0: the slot is empty
        std::uint32_t bytes = 0;
    };
    static_assert(sizeof(Entry) == cache_line_bytes, "an entry is one cache line");

    /// `slots` is 0 (no cache: every packet passes straight through) or a
    /// power of two up to 2^24. Throws std::invalid_argument otherwise.
    explicit AggregationCache(std::uint32_t slots) {
        if (slots != 0 && ((slots & (slots - 1)) != 0 || slots > (std::uint32_t{1} << 24))) {
            throw std::invalid_argument("aggregation cache slots must be 0 or a power of two up to 2^24");
        }
        entries_.assign(slots, Entry{});
        // The slot comes from the top bits of h2: the sketch columns and the
        // lifecycle's recent-flow table use h1 and the low bits.
        shift_ = slots <= 1 ? 64 : 64 - static_cast<std::uint32_t>(__builtin_ctz(slots));
    }

    void prefetch(const Hash128& hash) const noexcept {
        if (!entries_.empty()) __builtin_prefetch(&entries_[slot_of(hash)], 1, 3);
    }

    /// What add() did with a packet.
    enum class Added : std::uint8_t {
        summed,     // into its flow's pending entry: the flow was already in the cache
        inserted,   // a new entry, in an empty slot (or with no slots: see displaced)
        displaced,  // a new entry; the slot's previous pending counts are in `evicted`
    };

    /// Counts one packet of a flow. When that displaces pending counts they
    /// are in `evicted` and must go into the sketch: the previous flow of the
    /// slot, the flow itself when its sums would overflow, or (with no slots)
    /// this very packet.
    Added add(const FlowKey& key, const Hash128& hash, std::uint32_t bytes, Entry& evicted) noexcept {
        if (entries_.empty()) {
            evicted = Entry{key, hash, 1, bytes};
            return Added::displaced;
        }
        Entry& entry = entries_[slot_of(hash)];
        if (entry.packets != 0 && entry.hash == hash &&
            entry.packets != std::numeric_limits<std::uint32_t>::max() &&
            entry.bytes <= std::numeric_limits<std::uint32_t>::max() - bytes) {
            ++entry.packets;
            entry.bytes += bytes;
            return Added::summed;
        }
        const bool displaced = entry.packets != 0;
        if (displaced) evicted = entry;
        entry = Entry{key, hash, 1, bytes};
        return displaced ? Added::displaced : Added::inserted;
    }

    /// Hands every pending entry to `sink` in slot order and empties the cache.
    template <class Sink>
    void drain(Sink&& sink) {
        for (Entry& entry : entries_) {
            if (entry.packets == 0) continue;
            sink(entry);
            entry = Entry{};
        }
    }

    std::size_t memory_bytes() const noexcept { return entries_.capacity() * sizeof(Entry); }

private:
    std::size_t slot_of(const Hash128& hash) const noexcept {
        return shift_ >= 64 ? 0 : static_cast<std::size_t>(hash.h2 >> shift_);
    }

    CacheAlignedVector<Entry> entries_;
    std::uint32_t shift_ = 64;
};

}  // namespace flowsketch::core
