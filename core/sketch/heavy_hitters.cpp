#include "core/sketch/heavy_hitters.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <utility>

namespace flowsketch::core {

namespace {

/// The index table: a power of two ≥ 2·capacity (linear probing stays short).
std::uint64_t index_slots(std::uint32_t capacity) noexcept {
    return std::bit_ceil(std::uint64_t{capacity} * 2);
}

}  // namespace

HeavyHitterCandidates::HeavyHitterCandidates(std::uint32_t capacity) : capacity_(capacity) {
    if (capacity == 0 || capacity > (1u << 20)) {
        throw std::invalid_argument("heavy-hitter capacity must be in 1..1048576");
    }
    heap_.resize(capacity);
    const std::uint64_t table_size = index_slots(capacity);
    table_.assign(table_size, empty_slot);
    table_hash_.assign(table_size, 0);
    mask_ = table_size - 1;
}

std::uint32_t HeavyHitterCandidates::find_slot(const FlowKey& key, std::uint64_t h) const noexcept {
    for (std::uint64_t slot = h & mask_;; slot = (slot + 1) & mask_) {
        const std::uint32_t pos = table_[slot];
        if (pos == empty_slot) return static_cast<std::uint32_t>(slot);
        if (table_hash_[slot] == h && heap_[pos].key == key) return static_cast<std::uint32_t>(slot);
    }
}

// Backward-shift deletion keeps linear-probing chains intact without tombstones.
void HeavyHitterCandidates::erase_slot(std::uint32_t slot) noexcept {
    std::uint64_t hole = slot;
    for (std::uint64_t next = (hole + 1) & mask_; table_[next] != empty_slot;
         next = (next + 1) & mask_) {
        const std::uint64_t home = table_hash_[next] & mask_;
        // Move `next` into the hole if its home is not cyclically in (hole, next].
        const bool stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next);
        if (stays) continue;
        table_[hole] = table_[next];
        table_hash_[hole] = table_hash_[next];
        heap_[table_[hole]].slot = static_cast<std::uint32_t>(hole);
        hole = next;
    }
    table_[hole] = empty_slot;
}

void HeavyHitterCandidates::swap_entries(std::uint32_t a, std::uint32_t b) noexcept {
    std::swap(heap_[a], heap_[b]);
    table_[heap_[a].slot] = a;
    table_[heap_[b].slot] = b;
}

void HeavyHitterCandidates::sift_up(std::uint32_t i) noexcept {
    while (i > 0) {
        const std::uint32_t parent = (i - 1) / 2;
        if (heap_[parent].estimate <= heap_[i].estimate) break;
        swap_entries(i, parent);
        i = parent;
    }
}

void HeavyHitterCandidates::sift_down(std::uint32_t i) noexcept {
    for (;;) {
        const std::uint32_t left = 2 * i + 1;
        if (left >= size_) return;
        std::uint32_t smallest = left;
        const std::uint32_t right = left + 1;
        if (right < size_ && heap_[right].estimate < heap_[left].estimate) smallest = right;
        if (heap_[i].estimate <= heap_[smallest].estimate) return;
        swap_entries(i, smallest);
        i = smallest;
    }
}

void HeavyHitterCandidates::offer_slow(const FlowKey& key, const Hash128& hash, std::uint64_t estimate,
                                       std::uint64_t weight) noexcept {
    const std::uint64_t h = hash.h1;
    std::uint32_t slot = find_slot(key, h);
    if (table_[slot] != empty_slot) {
        // Estimates only grow within a window; a raised key sinks in a min-heap.
        HeapEntry& entry = heap_[table_[slot]];
        entry.exact += weight;
        if (estimate <= entry.estimate) return;
        entry.estimate = estimate;
        sift_down(table_[slot]);
        return;
    }
    std::uint32_t pos;
    if (size_ < capacity_) {
        pos = size_++;
    } else {
        // Evict the smallest candidate; its removal may shift our free slot.
        pos = 0;
        erase_slot(heap_[0].slot);
        slot = find_slot(key, h);
    }
    // The estimate includes the entering weight; what came before is bounded by the rest.
    heap_[pos] = HeapEntry{key, estimate, weight, estimate - std::min(weight, estimate), slot};
    table_[slot] = pos;
    table_hash_[slot] = h;
    if (pos == 0 && size_ == capacity_) {
        sift_down(0);
    } else {
        sift_up(pos);
    }
}

std::vector<HeavyHitterCandidates::Entry> HeavyHitterCandidates::entries() const {
    std::vector<Entry> out;
    out.reserve(size_);
    for (std::uint32_t i = 0; i < size_; ++i) {
        const HeapEntry& e = heap_[i];
        out.push_back(Entry{e.key, e.estimate, e.exact, e.exact + e.before_entry});
    }
    return out;
}

void HeavyHitterCandidates::clear() noexcept {
    std::fill(table_.begin(), table_.end(), empty_slot);
    size_ = 0;
}

std::size_t HeavyHitterCandidates::memory_bytes() const noexcept {
    return sizeof(*this) + heap_.capacity() * sizeof(HeapEntry) +
           table_.capacity() * sizeof(std::uint32_t) + table_hash_.capacity() * sizeof(std::uint64_t);
}

std::size_t HeavyHitterCandidates::planned_bytes(std::uint32_t capacity) noexcept {
    return sizeof(HeavyHitterCandidates) + std::size_t{capacity} * sizeof(HeapEntry) +
           index_slots(capacity) * (sizeof(std::uint32_t) + sizeof(std::uint64_t));
}

}  // namespace flowsketch::core
