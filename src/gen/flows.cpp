// The flow population: random keys (distinct, within documentation and
// benchmarking prefixes) and per-flow header state.
#include "src/gen/flows.hpp"

#include <array>
#include <cstddef>

#include "core/key/hash.hpp"
#include "src/gen/random_streams.hpp"

namespace flowsketch::gen {

namespace {

// Common service ports, so half the flows look like real services.
constexpr std::array<std::uint16_t, 12> service_ports = {80,  443, 53,   22,   25,   123,
                                                         161, 993, 3306, 5432, 6379, 8080};

std::uint32_t draw_ipv4(Rng& rng) {
    // Uniform over 10.0.0.0/8 and 198.18.0.0/15 (benchmarking range, RFC 2544),
    // skipping each prefix's all-zeros and all-ones host.
    constexpr std::uint64_t ten_size = std::uint64_t{1} << 24;
    constexpr std::uint64_t bench_size = std::uint64_t{1} << 17;
    for (;;) {
        const std::uint64_t i = rng.below(ten_size + bench_size);
        const bool ten = i < ten_size;
        const std::uint64_t host = ten ? i : i - ten_size;
        const std::uint64_t size = ten ? ten_size : bench_size;
        if (host == 0 || host == size - 1) continue;
        const std::uint32_t base = ten ? 0x0a000000U : 0xc6120000U;
        return base | static_cast<std::uint32_t>(host);
    }
}

std::array<std::uint8_t, 16> draw_ipv6(Rng& rng) {
    std::array<std::uint8_t, 16> a = {0x20, 0x01, 0x0d, 0xb8};  // 2001:db8::/32 (RFC 3849)
    const std::uint64_t hi = rng.next();
    const std::uint64_t lo = rng.next();
    for (std::size_t i = 0; i < 4; ++i) a[4 + i] = static_cast<std::uint8_t>(hi >> (8 * i));
    for (std::size_t i = 0; i < 8; ++i) a[8 + i] = static_cast<std::uint8_t>(lo >> (8 * i));
    return a;
}

core::FlowKey draw_key(Rng& rng, bool ipv6, std::uint8_t proto) {
    const auto sport = static_cast<std::uint16_t>(49152 + rng.below(16384));  // ephemeral
    const bool service = rng.chance(0.5);
    const std::uint64_t pick = rng.below(service ? service_ports.size() : 65535);
    const std::uint16_t dport =
        service ? service_ports[pick] : static_cast<std::uint16_t>(1 + pick);
    if (ipv6) {
        const auto src = draw_ipv6(rng);
        auto dst = draw_ipv6(rng);
        while (dst == src) dst = draw_ipv6(rng);
        return core::FlowKey::ipv6(src, dst, sport, dport, proto);
    }
    const std::uint32_t src = draw_ipv4(rng);
    std::uint32_t dst = draw_ipv4(rng);
    while (dst == src) dst = draw_ipv4(rng);
    return core::FlowKey::ipv4(src, dst, sport, dport, proto);
}

/// Open-addressing set of flow indices keyed by FlowKey: 8 bytes per flow where
/// a node-based set would cost ~70, which matters at tens of millions of flows.
class KeySet {
  public:
    KeySet(const std::vector<Flow>& flows, std::size_t expected) : flows_(flows) {
        std::size_t capacity = 16;
        while (capacity < 2 * expected) capacity *= 2;
        slots_.assign(capacity, 0);
    }
    /// Inserts flows_[index]'s key; false if an equal key is already present.
    bool insert(std::uint32_t index) {
        const core::FlowKey& key = flows_[index].key;
        const std::size_t mask = slots_.size() - 1;
        std::size_t i = static_cast<std::size_t>(core::hash64(&key, sizeof key, 0)) & mask;
        for (;; i = (i + 1) & mask) {
            if (slots_[i] == 0) {
                slots_[i] = index + 1;
                return true;
            }
            if (flows_[slots_[i] - 1].key == key) return false;
        }
    }

  private:
    const std::vector<Flow>& flows_;
    std::vector<std::uint32_t> slots_;  // flow index + 1; 0 is empty
};

}  // namespace

std::vector<Flow> make_flows(const GenConfig& config) {
    Rng rng = stream_rng(config.seed, Stream::flows);
    std::vector<Flow> flows(static_cast<std::size_t>(config.flows));
    KeySet seen(flows, flows.size());
    for (std::size_t i = 0; i < flows.size(); ++i) {
        Flow& flow = flows[i];
        // Every flow draws every attribute, so one option's value does not shift
        // the random stream that the others read.
        const bool ipv6 = rng.chance(config.ipv6_fraction);
        const bool vlan = rng.chance(config.vlan_fraction);
        const bool tcp = rng.chance(config.tcp_fraction);
        const auto vlan_id = static_cast<std::uint16_t>(1 + rng.below(4094));
        flow.vlan_id = vlan ? vlan_id : 0;
        flow.ipv6_flow_label = static_cast<std::uint32_t>(rng.next() & 0xfffff);
        flow.tcp_seq = static_cast<std::uint32_t>(rng.next());
        flow.ipv4_id = static_cast<std::uint16_t>(rng.next());
        do {
            flow.key = draw_key(rng, ipv6, tcp ? proto_tcp : proto_udp);
        } while (!seen.insert(static_cast<std::uint32_t>(i)));
    }
    return flows;
}

}  // namespace flowsketch::gen
