// Bounds-checked decoding of one frame into a flow key; the contract is in
// decode.hpp. The layers live in their own headers, all compiled here as one
// translation unit (see reader.hpp for why). Truncated (bytes missing) and
// invalid (fields contradict each other) are separate reasons, as in tcpdump.
#include "capture/decode/decode.hpp"

#include "capture/decode/ethernet_ipv4_fast_path.hpp"
#include "capture/decode/link_layer.hpp"
#include "capture/decode/reader.hpp"

namespace flowsketch::capture {

bool is_supported_link_type(int link_type) noexcept {
    switch (link_type) {
        case link_type::null:
        case link_type::ethernet:
        case link_type::raw:
        case link_type::raw_openbsd:
        case link_type::raw_linktype:
        case link_type::loop:
        case link_type::linux_sll:
        case link_type::ipv4:
        case link_type::ipv6:
        case link_type::linux_sll2:
            return true;
        default:
            return false;
    }
}

SkipReason decode_frame(int link_type, const std::uint8_t* data, std::size_t captured_length,
                        DecodedPacket& out, const DecodeLimits& limits,
                        TunnelCounts& tunnels) noexcept {
    if (link_type == link_type::ethernet &&
        decode_ethernet_ipv4(data, captured_length, out, limits.decapsulate_tunnels)) {
        return SkipReason::none;
    }
    out.tcp_flags = 0;
    out.is_fragment = false;
    Reader r(data, captured_length);
    const Walk walk{limits, tunnels, 0, nullptr};
    return decode_link_layer(link_type, r, out, walk);
}

SkipReason decode_frame(int link_type, const std::uint8_t* data, std::size_t captured_length,
                        DecodedPacket& out, const DecodeLimits& limits, TunnelCounts& tunnels,
                        core::TunnelTag& tag) noexcept {
    tag = {};
    // The fast path declines every frame that could be tunnelled.
    if (link_type == link_type::ethernet &&
        decode_ethernet_ipv4(data, captured_length, out, limits.decapsulate_tunnels)) {
        return SkipReason::none;
    }
    out.tcp_flags = 0;
    out.is_fragment = false;
    Reader r(data, captured_length);
    const Walk walk{limits, tunnels, 0, &tag};
    const SkipReason reason = decode_link_layer(link_type, r, out, walk);
    if (reason != SkipReason::none) tag = {};
    return reason;
}

SkipReason decode_frame(int link_type, const std::uint8_t* data, std::size_t captured_length,
                        DecodedPacket& out, const DecodeLimits& limits) noexcept {
    TunnelCounts ignored;
    return decode_frame(link_type, data, captured_length, out, limits, ignored);
}

}  // namespace flowsketch::capture
