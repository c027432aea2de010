// The flow population of `flowsketch gen`: one Flow record per 5-tuple, drawn
// from the seed, with its per-flow header state and truth counters.
#pragma once

#include <cstdint>
#include <vector>

#include "core/key/flow_key.hpp"
#include "src/gen/gen_config.hpp"

namespace flowsketch::gen {

/// IP protocol numbers of the flows gen writes.
inline constexpr std::uint8_t proto_tcp = 6;
inline constexpr std::uint8_t proto_udp = 17;

/// One flow: its key and encapsulation, per-flow header state, and its truth
/// counters. Lifetime state lives beside it (LifetimeScheduler), so the
/// stationary mode pays nothing for it.
struct Flow {
    core::FlowKey key;
    std::uint64_t packets = 0;  // truth: packets emitted
    std::uint64_t bytes = 0;    // truth: sum of wire lengths
    std::uint32_t tcp_seq = 0;
    std::uint32_t ipv6_flow_label = 0;
    std::uint16_t ipv4_id = 0;
    std::uint16_t vlan_id = 0;  // 0: untagged
};

/// Draws `config.flows` flows with distinct 5-tuples. Index i is popularity rank i + 1.
std::vector<Flow> make_flows(const GenConfig& config);

}  // namespace flowsketch::gen
