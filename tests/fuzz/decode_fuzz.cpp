// Fuzz target: one frame through decode_frame.
//
// Input layout: byte 0 selects the link type (low 7 bits, modulo the table below, which
// make_decode_corpus.py mirrors) and, with its high bit, tight DecodeLimits (1 VLAN tag,
// 1 MPLS label, 1 extension header, 1 tunnel) so short inputs reach the limit paths; the rest is the
// frame. The harness traps on any broken invariant of a decoded key, and on an Ethernet frame
// that decodes otherwise than the Linux cooked capture of its payload (the fast path's check).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "capture/decode/decode.hpp"
#include "core/key/key_spec.hpp"

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

// An Ethernet frame and the Linux cooked capture of its payload decode alike:
// the cooked one never takes decode_frame's Ethernet/IPv4 fast path.
void check_ethernet_against_cooked(const std::uint8_t* frame, std::size_t length,
                                   const DecodeLimits& limits) {
    if (length < 14) return;
    std::vector<std::uint8_t> cooked(16 + (length - 14));
    cooked[14] = frame[12];  // the protocol: the Ethernet type
    cooked[15] = frame[13];
    std::memcpy(cooked.data() + 16, frame + 14, length - 14);
    DecodedPacket ethernet;
    DecodedPacket general;
    const SkipReason reason =
        flowsketch::capture::decode_frame(lt::ethernet, frame, length, ethernet, limits);
    check(flowsketch::capture::decode_frame(lt::linux_sll, cooked.data(), cooked.size(), general,
                                            limits) == reason);
    if (reason != SkipReason::none) return;
    check(ethernet.key == general.key && ethernet.tcp_flags == general.tcp_flags &&
          ethernet.is_fragment == general.is_fragment);
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
        limits.max_tunnel_depth = 1;
    }

    if (link == lt::ethernet) check_ethernet_against_cooked(data + 1, size - 1, limits);

    DecodedPacket out;
    flowsketch::capture::TunnelCounts tunnels;
    const SkipReason reason =
        flowsketch::capture::decode_frame(link, data + 1, size - 1, out, limits, tunnels);
    // A tunnel never costs a frame: what the outer packet keyed, decapsulation keys too.
    DecodedPacket outer;
    DecodeLimits outer_limits = limits;
    outer_limits.decapsulate_tunnels = false;
    const SkipReason outer_reason =
        flowsketch::capture::decode_frame(link, data + 1, size - 1, outer, outer_limits);
    check(reason == outer_reason);
    if (tunnels.empty()) {
        check(reason != SkipReason::none ||
              (outer.key == out.key && outer.tcp_flags == out.tcp_flags &&
               outer.is_fragment == out.is_fragment));
    }
    const bool supported = flowsketch::capture::is_supported_link_type(link);
    check(static_cast<std::size_t>(reason) < flowsketch::capture::skip_reason_count);
    check(supported == (reason != SkipReason::unsupported_link_type));
    if (reason != SkipReason::none) return 0;

    const auto& key = out.key;
    check(key.family == AddressFamily::ipv4 || key.family == AddressFamily::ipv6);
    check(key.vlan == 0);  // written only when asked for
    // Asked for, the outer VLAN id is the one difference, and 12 bits wide.
    DecodeLimits with_vlan = limits;
    with_vlan.outer_vlan = true;
    DecodedPacket tagged;
    check(flowsketch::capture::decode_frame(link, data + 1, size - 1, tagged, with_vlan) == SkipReason::none);
    check(tagged.key.vlan <= 0x0fff);
    tagged.key.vlan = 0;
    check(tagged.key == key);
    if (key.family == AddressFamily::ipv4) {
        // IPv4 addresses fill only the first 4 of the 16 bytes.
        for (std::size_t i = 4; i < 16; ++i) check(key.src[i] == 0 && key.dst[i] == 0);
    }
    // With a tunnel tag (`--key tunnel`, `+vni`): the same key and counts; a
    // tag only for a frame an inner flow keyed, and every spec's key built from it.
    DecodedPacket with_tag;
    flowsketch::capture::TunnelCounts tag_tunnels;
    flowsketch::core::TunnelTag tag;
    check(flowsketch::capture::decode_frame(link, data + 1, size - 1, with_tag, limits, tag_tunnels, tag) ==
          SkipReason::none);
    check(with_tag.key == key && tag_tunnels.inner == tunnels.inner);
    check(tag.type <= flowsketch::core::tunnel_type_names.size());
    bool keyed_inside = false;
    for (const std::uint64_t n : tunnels.inner) keyed_inside = keyed_inside || n != 0;
    check((tag.type != 0) == keyed_inside);
    check(tag.has_id || tag.id == 0);
    if (tag.type != 0) check(tag.family == AddressFamily::ipv4 || tag.family == AddressFamily::ipv6);
    for (const char* spec : {"tunnel+vni", "dst+vni", "sport+vni"}) {
        const flowsketch::core::KeySpec parsed = flowsketch::core::KeySpec::parse(spec);
        check(parsed.vni_of(parsed.key_of(key, tag)) == tag.id);
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
