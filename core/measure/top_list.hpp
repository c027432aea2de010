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

namespace flowsketch::core {

struct HeavyHitter {
    FlowKey key;                 // the packet's key under the list's spec (other fields zero)
    std::uint64_t estimate = 0;  // never below the truth
    std::uint64_t lower = 0;     // truth ≥ lower with probability ≥ 1 − δ
    /// Another candidate maps to exactly the same cell in every row, so the
    /// sketch cannot tell their counts apart: the estimate bounds their sum and
    /// `lower` is 0. The per-query δ does not cover selecting a list from
    /// millions of keys, among which a few share every cell with a heavy one
    /// (probability 1/w² per pair in the Kirsch–Mitzenmacher scheme).
    bool shares_cells = false;
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

/// The candidates `keys` (under `spec`) ranked by their estimates in `lane`
/// of `sketch`, at most top_k, largest first (ties by key). Keys that share
/// every cell with another candidate are flagged and their lower bound is 0.
TopList rank_keys(const CountMinSketch& sketch, std::uint32_t lane, std::span<const FlowKey> keys,
                  const KeySpec& spec, Weight weight, std::uint32_t top_k, std::uint64_t hash_seed);

}  // namespace flowsketch::core
