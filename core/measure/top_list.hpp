// A ranked list of heavy hitters of one key spec and one weight, with the
// window total N that its bounds are stated against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/key/flow_key.hpp"
#include "core/key/key_spec.hpp"
#include "core/measure/window.hpp"
#include "core/sketch/count_min.hpp"
#include "core/sketch/distinct_sketch.hpp"

namespace flowsketch::core {

struct HeavyHitter {
    FlowKey key;  // the packet's key under the list's spec (other fields zero)
    /// Never below the truth: the Count-Min estimate, lowered where the
    /// candidates' exact counts show that part of it is other keys' (see rank_keys).
    std::uint64_t estimate = 0;
    std::uint64_t lower = 0;  // truth ≥ lower with probability ≥ 1 − δ; ≥ exact always
    /// Another candidate maps to exactly the same cell in every row, so the
    /// sketch cannot tell their counts apart: `lower` is only the exact count
    /// since the key became a candidate. The per-query δ does not cover
    /// selecting a list from millions of keys, among which a few share every
    /// cell with a heavy one (probability 1/w² per pair in the
    /// Kirsch–Mitzenmacher scheme).
    bool shares_cells = false;
};

/// What a candidate set knows of a key beside the sketch: the weight counted
/// since it entered the set (never above its truth), and an upper bound of
/// its truth from the estimate it entered with (none: the largest value).
struct CandidateCount {
    std::uint64_t exact = 0;
    std::uint64_t upper = UINT64_MAX;
    friend bool operator==(const CandidateCount&, const CandidateCount&) = default;
};

struct TopList {
    KeySpec spec = KeySpec::five_tuple();
    Weight weight = Weight::packets;
    std::uint64_t total = 0;        // N: the window's packets or bytes
    std::vector<HeavyHitter> rows;  // largest estimate first

    // The rows as a container, so a list reads like the vector it holds.
    auto begin() const noexcept { return rows.begin(); }
    auto end() const noexcept { return rows.end(); }
    std::size_t size() const noexcept { return rows.size(); }
    bool empty() const noexcept { return rows.empty(); }
    const HeavyHitter& operator[](std::size_t i) const noexcept { return rows[i]; }
    const HeavyHitter& front() const noexcept { return rows.front(); }
};

/// A key's count in the previous interval and in this one, from the two
/// intervals' sketches. Each estimate is never below its truth and at most ε·N
/// above it (probability ≥ 1 − δ each), so the true change lies in
/// [change − ε·N_current, change + ε·N_previous]: |error| ≤ bound with
/// probability ≥ 1 − 2δ, bound = ε·max(N_previous, N_current).
struct KeyChange {
    FlowKey key;
    std::uint64_t previous = 0;
    std::uint64_t current = 0;
    std::int64_t change = 0;  // current − previous
};

struct ChangeList {
    KeySpec spec = KeySpec::five_tuple();
    Weight weight = Weight::packets;
    std::uint64_t previous_total = 0;  // N of the previous interval
    std::uint64_t current_total = 0;   // N of this one
    double bound = 0;                  // see KeyChange
    bool has_previous = false;         // false in a run's first interval
    std::vector<KeyChange> rows;       // largest |change| first

    auto begin() const noexcept { return rows.begin(); }
    auto end() const noexcept { return rows.end(); }
    std::size_t size() const noexcept { return rows.size(); }
    bool empty() const noexcept { return rows.empty(); }
};

/// The candidates `keys` (under `spec`) ranked by their estimates in `lane`
/// of `sketch`, at most top_k, largest first (ties by key). `counts` is empty
/// or holds each key's CandidateCount: a key's estimate is then also at most
/// its upper bound and, in every row, its cell less the exact counts of the
/// other candidates in that cell (a cell holds the sum of its keys' counts,
/// each at least its exact count; not so under conservative update, where
/// the rows are left alone); its lower bound is at least its exact count.
/// Keys that share every cell with another candidate are flagged and their
/// lower bound is their exact count.
TopList rank_keys(const CountMinSketch& sketch, std::uint32_t lane, std::span<const FlowKey> keys,
                  const KeySpec& spec, Weight weight, std::uint32_t top_k, std::uint64_t hash_seed,
                  std::span<const CandidateCount> counts = {});

/// The distinct counts of a list's keys, row by row, from `distinct`. A key
/// has no more distinct items than packets, and `lane` of `sketch` (the
/// window's packets) never underestimates those: estimate and upper bound are
/// capped there, which removes the noise of shared cells from small keys.
std::vector<DistinctBounds> distinct_counts(const TopList& list, const DistinctSketch& distinct,
                                            const CountMinSketch& sketch, std::uint32_t lane, std::uint64_t hash_seed);

/// A list ranked by distinct count: its rows (with their packet estimates
/// and bounds) and each row's distinct count.
struct DistinctTopList {
    TopList list;
    std::vector<DistinctBounds> distinct;  // most first
};

/// The candidates `keys` ranked by their distinct counts on `distinct`, at
/// most top_k, most first (ties by key); each row also carries its packet
/// estimate and bounds from `lane` of `sketch`.
DistinctTopList rank_by_distinct(const CountMinSketch& sketch, std::uint32_t lane, std::span<const FlowKey> keys,
                                 const DistinctSketch& distinct, const KeySpec& spec, std::uint32_t top_k,
                                 std::uint64_t hash_seed);

}  // namespace flowsketch::core
