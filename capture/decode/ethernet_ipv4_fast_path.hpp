// The fast path: Ethernet, IPv4 without options, TCP or UDP, the first (or
// only) fragment, every header captured — nearly every frame of most links.
// Private to decode.cpp (see reader.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "capture/decode/decode.hpp"
#include "capture/decode/protocol_numbers.hpp"
#include "capture/decode/reader.hpp"

namespace flowsketch::capture {
namespace {

// One take of the 48 bytes it may read, then fields at fixed offsets, without
// the general path's dispatch on link type, Ethernet type, options and
// protocol. A frame it does not take, including every frame that would be
// skipped, goes the general way, which keys the frames it takes exactly as
// this does (tests/capture/decode_fast_path_test.cpp compares the two).
// With `decapsulate`, UDP to a tunnel port goes the general way too, to the tunnel layer.
FLOWSKETCH_HOT bool decode_ethernet_ipv4(const std::uint8_t* data, std::size_t length,
                                         DecodedPacket& out, bool decapsulate) noexcept {
    Reader r(data, length);
    Header<48> h;  // Ethernet 14, IPv4 without options 20, TCP as far as its flags 14
    if (!r.take(h)) return false;
    if (h.be16<12>() != ethertype::ipv4 || h.u8<14>() != 0x45) return false;
    const std::uint16_t fragment_field = h.be16<20>();
    if ((fragment_field & 0x1FFFu) != 0) return false;
    // The transport bytes the IP length leaves in the captured window (as Reader::clamp).
    std::size_t window = length - 34;
    const std::uint16_t total_length = h.be16<16>();
    if (total_length != 0) {
        if (total_length < 20) return false;
        window = std::min<std::size_t>(window, total_length - 20u);
    }
    const std::uint8_t protocol = h.u8<23>();
    std::uint8_t tcp_flags = 0;
    if (protocol == ip_proto::tcp) {
        if (window < 14 || (h.u8<46>() >> 4) < 5) return false;
        tcp_flags = h.u8<47>();
    } else if (protocol == ip_proto::udp) {
        const std::uint16_t udp_length = h.be16<38>();
        if (window < 6 || (udp_length != 0 && udp_length < 8)) return false;
        if (decapsulate && tunnel_port(h.be16<34>(), h.be16<36>()) != 0) return false;
    } else {
        return false;
    }
    out.tcp_flags = tcp_flags;
    out.is_fragment = (fragment_field & 0x2000u) != 0;
    out.key.assign_ipv4(h.be32<26>(), h.be32<30>(), h.be16<34>(), h.be16<36>(), protocol);
    return true;
}

}  // namespace
}  // namespace flowsketch::capture
