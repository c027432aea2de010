// A window's distinct flows, sources and destinations: three HyperLogLog
// counters of 2^12 registers (σ ≈ 1.6%), kept when some key spec counts
// distinct items (the operator is asking "how many" questions).
#pragma once

#include <cstdint>

#include "core/key/flow_key.hpp"
#include "core/key/hash.hpp"
#include "core/key/key_spec.hpp"
#include "core/measure/window_value.hpp"
#include "core/sketch/hyperloglog.hpp"

namespace flowsketch::core {

class DistinctTotalsSketch {
public:
    static constexpr std::uint32_t register_bits = 12;

    /// One packet: its 5-tuple's hash and its key.
    void add(const Hash128& flow, const FlowKey& key, std::uint64_t seed) noexcept {
        flows_.add(flow.h1);
        sources_.add(field_hash(key, key_src, seed));
        destinations_.add(field_hash(key, key_dst, seed));
    }
    /// The estimates with their bounds at DistinctSketch::t standard errors.
    DistinctTotals totals() const noexcept;
    void merge(const DistinctTotalsSketch& other) {
        flows_.merge(other.flows_);
        sources_.merge(other.sources_);
        destinations_.merge(other.destinations_);
    }
    void clear() noexcept {
        flows_.clear();
        sources_.clear();
        destinations_.clear();
    }
    /// The counters in the order a window value keeps them: flows, sources, destinations.
    static constexpr std::size_t counters = 3;
    HyperLogLog& counter(std::size_t i) noexcept { return i == 0 ? flows_ : i == 1 ? sources_ : destinations_; }
    const HyperLogLog& counter(std::size_t i) const noexcept {
        return i == 0 ? flows_ : i == 1 ? sources_ : destinations_;
    }
    std::size_t memory_bytes() const noexcept {
        return flows_.memory_bytes() + sources_.memory_bytes() + destinations_.memory_bytes();
    }
    static std::uint64_t planned_bytes() noexcept { return 3 * (sizeof(HyperLogLog) + (std::uint64_t{1} << register_bits)); }

private:
    HyperLogLog flows_{register_bits};
    HyperLogLog sources_{register_bits};
    HyperLogLog destinations_{register_bits};
};

}  // namespace flowsketch::core
