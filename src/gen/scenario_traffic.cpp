// Scenario flows (spoofed, scanning or surging) and their packets' times.
#include "src/gen/scenario_traffic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "src/gen/frame_builder.hpp"
#include "src/gen/random_streams.hpp"
#include "src/gen/scenario.hpp"

namespace flowsketch::gen {
namespace {

constexpr std::uint32_t spoofed_base = 0x64400000;  // 100.64.0.0/10
constexpr std::uint16_t surge_frame_size = 1500;

// Distinct spoofed sources: k -> 100.64.0.0 + (k * multiplier + offset) mod 2^22,
// a bijection of [0, 2^22) for an odd multiplier, with a source port each.
class SpoofedSources {
  public:
    explicit SpoofedSources(Rng& rng)
        : multiplier_((rng.next() | 1) & mask), offset_(rng.next() & mask), port_seed_(rng.next()) {}
    std::uint32_t address(std::uint64_t k) const noexcept {
        return spoofed_base | static_cast<std::uint32_t>((k * multiplier_ + offset_) & mask);
    }
    std::uint16_t port(std::uint64_t k) const noexcept {
        return static_cast<std::uint16_t>(1024 + splitmix_mix(k ^ port_seed_) % 64512);
    }

  private:
    static constexpr std::uint64_t mask = max_spoofed_sources - 1;
    std::uint64_t multiplier_;
    std::uint64_t offset_;
    std::uint64_t port_seed_;
};

Flow scenario_flow(Rng& rng, std::uint32_t src, std::uint32_t dst, std::uint16_t sport, std::uint16_t dport,
                   std::uint8_t protocol) {
    Flow flow;
    flow.key = core::FlowKey::ipv4(src, dst, sport, dport, protocol);
    flow.tcp_seq = static_cast<std::uint32_t>(rng.next());
    flow.ipv4_id = static_cast<std::uint16_t>(rng.next());
    return flow;
}

// The scenario's flows, in the order its packets cycle over them.
std::vector<Flow> flows_of(const Scenario& s, Rng& rng) {
    std::vector<Flow> flows;
    const SpoofedSources spoofed(rng);
    const auto scanner_port = static_cast<std::uint16_t>(32768 + rng.below(28232));
    switch (s.kind) {
        case ScenarioKind::syn_flood:
            for (std::uint32_t k = 0; k < s.count; ++k) {
                flows.push_back(scenario_flow(rng, spoofed.address(k), s.target, spoofed.port(k), s.port, proto_tcp));
            }
            break;
        case ScenarioKind::carpet_bomb: {
            // Flow k: source k mod S to host k mod 256; for k < max(S, 256) each
            // (source, host) pair comes once.
            const std::uint32_t n = std::max<std::uint32_t>(s.count, 256);
            for (std::uint32_t k = 0; k < n; ++k) {
                const std::uint32_t source = k % s.count;
                flows.push_back(scenario_flow(rng, spoofed.address(source), s.target | (k % 256),
                                              spoofed.port(source), s.port, proto_tcp));
            }
            break;
        }
        case ScenarioKind::horizontal_scan:
            for (std::uint32_t k = 0; k < s.count; ++k) {
                flows.push_back(scenario_flow(rng, s.source, s.target + k, scanner_port, s.port, proto_tcp));
            }
            break;
        case ScenarioKind::vertical_scan:
            for (std::uint32_t k = 0; k < s.count; ++k) {
                flows.push_back(scenario_flow(rng, s.source, s.target, scanner_port, static_cast<std::uint16_t>(k + 1),
                                              proto_tcp));
            }
            break;
        case ScenarioKind::surge:
            flows.push_back(scenario_flow(rng, s.source, s.target, scanner_port, s.port, proto_udp));
            break;
    }
    return flows;
}

std::uint64_t to_us(double seconds) { return static_cast<std::uint64_t>(std::llround(seconds * 1e6)); }

// Two scenarios must not share a 5-tuple: the truth lists each flow once.
void check_disjoint(const GenConfig& config, const std::vector<Flow>& flows,
                    const std::vector<ScenarioTraffic::Placement>& placements) {
    std::vector<std::pair<core::FlowKey, std::size_t>> keys;
    for (std::size_t s = 0; s < placements.size(); ++s) {
        for (std::size_t f = 0; f < placements[s].flows; ++f) keys.emplace_back(flows[placements[s].first_flow + f].key, s);
    }
    std::sort(keys.begin(), keys.end(),
              [](const auto& a, const auto& b) { return core::compare_keys(a.first, b.first) < 0; });
    for (std::size_t i = 1; i < keys.size(); ++i) {
        if (keys[i].first == keys[i - 1].first) {
            const std::size_t a = std::min(keys[i].second, keys[i - 1].second);
            const std::size_t b = std::max(keys[i].second, keys[i - 1].second);
            throw std::invalid_argument(fmt::format(
                "--scenario {} and --scenario {} send the same flow ({} -> {}); give one of them another "
                "source or target",
                scenario_text(config.scenarios[a]), scenario_text(config.scenarios[b]),
                core::format_address(keys[i].first, true), core::format_address(keys[i].first, false)));
        }
    }
}

}  // namespace

void check_scenario_flows(const GenConfig& config) {
    std::vector<Flow> flows;
    std::vector<ScenarioTraffic::Placement> placements;
    for (std::size_t index = 0; index < config.scenarios.size(); ++index) {
        Rng rng = stream_rng(config.seed, Stream::scenarios, index);
        ScenarioTraffic::Placement place;
        place.first_flow = flows.size();
        for (Flow& flow : flows_of(config.scenarios[index], rng)) flows.push_back(flow);
        place.flows = flows.size() - place.first_flow;
        placements.push_back(place);
    }
    check_disjoint(config, flows, placements);
}

ScenarioTraffic::ScenarioTraffic(const GenConfig& config, std::vector<Flow>& flows, std::uint64_t span_us) {
    std::uint64_t total = 0;
    for (const Scenario& s : config.scenarios) total += s.packets;
    if (total > max_scenario_packets) {
        throw std::invalid_argument(
            fmt::format("the scenarios send {} packets together; at most {}", total, max_scenario_packets));
    }
    packets_.reserve(static_cast<std::size_t>(total));
    for (std::size_t index = 0; index < config.scenarios.size(); ++index) {
        const Scenario& s = config.scenarios[index];
        Rng rng = stream_rng(config.seed, Stream::scenarios, index);
        Placement place;
        place.first_flow = flows.size();
        for (Flow& flow : flows_of(s, rng)) flows.push_back(flow);
        place.flows = flows.size() - place.first_flow;
        place.packets = s.packets;

        const double default_start = s.kind == ScenarioKind::surge ? static_cast<double>(span_us / 2) / 1e6 : 0.0;
        const std::uint64_t start = to_us(s.start >= 0 ? s.start : default_start);
        const std::uint64_t end =
            s.duration >= 0 ? start + to_us(s.duration) : std::max(start, span_us);
        std::vector<std::uint64_t> times(static_cast<std::size_t>(s.packets));
        for (std::uint64_t& t : times) t = start + rng.below(end - start + 1);
        std::sort(times.begin(), times.end());
        place.first_us = times.front();
        place.last_us = times.back();
        const std::uint8_t flags = sends_syns(s.kind) ? 0x02 : 0;  // SYN
        for (std::size_t j = 0; j < times.size(); ++j) {
            const std::size_t flow = place.first_flow + j % place.flows;
            const auto wire = static_cast<std::uint16_t>(
                s.kind == ScenarioKind::surge ? surge_frame_size : FrameBuilder::min_size(flows[flow]));
            packets_.push_back({times[j], static_cast<std::uint32_t>(flow), wire, flags});
        }
        placements_.push_back(place);
    }
    check_disjoint(config, flows, placements_);
    // One stream in time order; at equal times the earlier scenario first.
    std::stable_sort(packets_.begin(), packets_.end(),
                     [](const Packet& a, const Packet& b) { return a.time_us < b.time_us; });
}

PacketEvent ScenarioTraffic::next(std::uint8_t& tcp_flags) noexcept {
    const Packet& p = packets_[next_++];
    tcp_flags = p.tcp_flags;
    return {p.flow, p.time_us, p.wire};
}

std::size_t ScenarioTraffic::scenario_of(std::size_t flow) const noexcept {
    for (std::size_t s = 0; s < placements_.size(); ++s) {
        if (flow >= placements_[s].first_flow && flow < placements_[s].first_flow + placements_[s].flows) return s + 1;
    }
    return 0;
}

}  // namespace flowsketch::gen
