// Fuzz target: one frame through decode_frame.
//
// Input layout: byte 0 selects the link type (low 7 bits, modulo the table below, which
// make_decode_corpus.py mirrors) and, with its high bit, tight DecodeLimits (1 VLAN tag,
// 1 MPLS label, 1 extension header) so short inputs reach the limit paths; the rest is the
// frame. The harness traps on any broken invariant of a decoded key.
#include <array>
#include <cstddef>
#include <cstdint>

#include "capture/decode.hpp"

namespace {

namespace lt = flowsketch::capture::link_type;
using flowsketch::capture::DecodedPacket;
using flowsketch::capture::DecodeLimits;
using flowsketch::capture::SkipReason;
using flowsketch::core::AddressFamily;

constexpr int kUnsupportedLinkType = 147;  // DLT_USER0
constexpr std::array<int, 11> kLinkTypes = {
    lt::null,      lt::ethernet, lt::raw,  lt::raw_openbsd, lt::raw_linktype,     lt::loop,
    lt::linux_sll, lt::ipv4,     lt::ipv6, lt::linux_sll2,  kUnsupportedLinkType,
};

bool has_ports(std::uint8_t protocol) {
    return protocol == 6 || protocol == 17 || protocol == 33 || protocol == 132 || protocol == 136;
}

void check(bool condition) {
    if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const int link = kLinkTypes[(data[0] & 0x7Fu) % kLinkTypes.size()];
    DecodeLimits limits;
    if ((data[0] & 0x80u) != 0) {
        limits.max_vlan_tags = 1;
        limits.max_mpls_labels = 1;
        limits.max_ipv6_extension_headers = 1;
    }

    DecodedPacket out;
    const SkipReason reason =
        flowsketch::capture::decode_frame(link, data + 1, size - 1, out, limits);
    const bool supported = flowsketch::capture::is_supported_link_type(link);
    check(static_cast<std::size_t>(reason) < flowsketch::capture::skip_reason_count);
    check(supported == (reason != SkipReason::unsupported_link_type));
    if (reason != SkipReason::none) return 0;

    const auto& key = out.key;
    check(key.family == AddressFamily::ipv4 || key.family == AddressFamily::ipv6);
    check(key.reserved[0] == 0 && key.reserved[1] == 0);
    if (key.family == AddressFamily::ipv4) {
        // IPv4 addresses fill only the first 4 of the 16 bytes.
        for (std::size_t i = 4; i < 16; ++i) check(key.src[i] == 0 && key.dst[i] == 0);
    }
    if (!has_ports(key.protocol)) check(key.src_port == 0 && key.dst_port == 0);
    if (key.protocol != 6) check(out.tcp_flags == 0);

    // Decoding is a pure function of the bytes.
    DecodedPacket again;
    check(flowsketch::capture::decode_frame(link, data + 1, size - 1, again, limits) == reason);
    check(again.key == key && again.tcp_flags == out.tcp_flags &&
          again.is_fragment == out.is_fragment);
    return 0;
}
