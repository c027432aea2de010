// The exact hash-map counter: the baseline a sketch is compared against.
//
// Walks capture files with pcap_next_ex (as pcap_floor does), decodes each
// frame with flowsketch's own decoder, and counts packets and bytes per flow
// exactly in a std::unordered_map. Nothing is reserved: the map grows with the
// number of flows, which is the point of the comparison (time and peak RSS
// against flowsketch's fixed memory; bench/replay_benchmark.sh runs both).
// At the end it prints the number of flows and the top 10 by packets.
#include <pcap/pcap.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/decode/decode.hpp"
#include "core/key/flow_key.hpp"
#include "core/key/hash.hpp"

namespace {

using flowsketch::core::FlowKey;

struct KeyHash {
    std::size_t operator()(const FlowKey& key) const noexcept {
        return static_cast<std::size_t>(flowsketch::core::hash_key(key, 0).h1);
    }
};

struct Counts {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
};

std::string endpoint(const FlowKey& key, bool source) {
    const std::string address = flowsketch::core::format_address(key, source);
    const std::uint16_t port = source ? key.src_port : key.dst_port;
    return key.family == flowsketch::core::AddressFamily::ipv6 ? "[" + address + "]:" + std::to_string(port)
                                                                : address + ":" + std::to_string(port);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: exact_counter FILE...\n");
        return 2;
    }
    std::unordered_map<FlowKey, Counts, KeyHash> flows;
    std::uint64_t frames = 0;
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    std::array<std::uint64_t, flowsketch::capture::skip_reason_count> skipped{};
    for (int i = 1; i < argc; ++i) {
        char errbuf[PCAP_ERRBUF_SIZE] = {};
        pcap_t* handle = pcap_open_offline(argv[i], errbuf);
        if (handle == nullptr) {
            std::fprintf(stderr, "exact_counter: %s: %s\n", argv[i], errbuf);
            return 1;
        }
        const int link = pcap_datalink(handle);
        pcap_pkthdr* header = nullptr;
        const u_char* data = nullptr;
        flowsketch::capture::DecodedPacket decoded;
        int status = 0;
        while ((status = pcap_next_ex(handle, &header, &data)) == 1) {
            ++frames;
            const auto reason = flowsketch::capture::decode_frame(link, data, header->caplen, decoded);
            if (reason != flowsketch::capture::SkipReason::none) {
                ++skipped[static_cast<std::size_t>(reason)];
                continue;
            }
            Counts& counts = flows[decoded.key];
            ++counts.packets;
            counts.bytes += header->len;
            ++packets;
            bytes += header->len;
        }
        if (status == PCAP_ERROR) {
            std::fprintf(stderr, "exact_counter: %s: %s\n", argv[i], pcap_geterr(handle));
            pcap_close(handle);
            return 1;
        }
        pcap_close(handle);
    }

    std::vector<std::pair<const FlowKey*, Counts>> top;
    top.reserve(flows.size());
    for (const auto& [key, counts] : flows) top.emplace_back(&key, counts);
    const std::size_t shown = std::min<std::size_t>(10, top.size());
    std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(shown), top.end(),
                      [](const auto& a, const auto& b) {
                          if (a.second.packets != b.second.packets) return a.second.packets > b.second.packets;
                          return flowsketch::core::compare_keys(*a.first, *b.first) < 0;
                      });

    std::printf("frames %llu packets %llu bytes %llu flows %zu\n", static_cast<unsigned long long>(frames),
                static_cast<unsigned long long>(packets), static_cast<unsigned long long>(bytes), flows.size());
    for (std::size_t r = 1; r < skipped.size(); ++r) {
        if (skipped[r] == 0) continue;
        std::printf("skipped %s %llu\n",
                    std::string(flowsketch::capture::skip_reason_name(static_cast<flowsketch::capture::SkipReason>(r))).c_str(),
                    static_cast<unsigned long long>(skipped[r]));
    }
    std::printf("top %zu by packets: proto src dst packets bytes\n", shown);
    for (std::size_t r = 0; r < shown; ++r) {
        const FlowKey& key = *top[r].first;
        std::printf("%u %s %s %llu %llu\n", static_cast<unsigned>(key.protocol), endpoint(key, true).c_str(),
                    endpoint(key, false).c_str(), static_cast<unsigned long long>(top[r].second.packets),
                    static_cast<unsigned long long>(top[r].second.bytes));
    }
    return 0;
}
