// The distinct counts of one key spec that asks for them (`dst:distinct=src`):
// the interval's distinct sketch and the keys with the most distinct items,
// and the run's, into which each closed interval merges (registers by
// maximum: a run's counts are exactly those of one sketch over all of it).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/key/key_spec.hpp"
#include "core/measure/window.hpp"
#include "core/sketch/distinct_sketch.hpp"
#include "core/sketch/heavy_hitters.hpp"

namespace flowsketch::core {

class DistinctCounts {
public:
    /// Throws std::invalid_argument on bad sketch or candidate parameters,
    /// or a spec that counts no distinct field.
    DistinctCounts(const KeySpec& spec, const DistinctSketchParams& params, std::uint32_t candidates,
                   std::uint64_t hash_seed);

    /// One packet: `key` under the spec, `hash` its hash, `packet` the whole
    /// key the distinct field is read from. A key whose estimate may have
    /// grown is offered to the candidates.
    void add(const FlowKey& key, const Hash128& hash, const FlowKey& packet) noexcept {
        const std::uint64_t pair = pair_hash(hash, field_hash(packet, spec_.distinct(), hash_seed_));
        if (const std::optional<double> estimate = interval_.add(hash, pair)) {
            interval_candidates_.offer(key, hash, static_cast<std::uint64_t>(*estimate));
        }
    }

    /// The window's sketch: the interval's, or the run's with the open
    /// interval merged in (computed into a buffer allocated up front).
    const DistinctSketch& sketch(Window window);
    /// The keys that may have the most distinct items in the window.
    std::vector<FlowKey> candidate_keys(Window window) const;

    /// Closes an interval: it merges into the run, and starts again empty.
    void close_interval();

    const DistinctSketchParams& params() const noexcept { return interval_.params(); }
    std::size_t memory_bytes() const noexcept;
    static std::uint64_t planned_bytes(const DistinctSketchParams& params, std::uint32_t candidates) noexcept;

private:
    KeySpec spec_;
    std::uint64_t hash_seed_;
    DistinctSketch interval_;
    DistinctSketch closed_;  // the closed intervals, merged
    DistinctSketch run_;     // closed_ with the open interval: what a run query reads
    HeavyHitterCandidates interval_candidates_;
    std::vector<FlowKey> run_keys_;  // every closed interval's candidates, most distinct kept
    std::uint32_t capacity_;
};

}  // namespace flowsketch::core
