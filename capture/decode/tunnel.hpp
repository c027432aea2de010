// Between the network and the transport layer: what the IP header's protocol
// (or last IPv6 next header) leads to. Private to decode.cpp (see reader.hpp).
//
// Today that is always the transport layer: tunnels (IP-in-IP, GRE, VXLAN,
// ...) are keyed by their outer header. A tunnel layer goes here: recognise
// the encapsulation by `protocol` (and, for UDP-borne tunnels, the ports),
// narrow `r` to the inner packet (Reader::skip, Reader::clamp) and hand it
// back to the network layer (decode_ip_by_version in network_layer.hpp, to be
// declared ahead of this header), with a depth limit in DecodeLimits like the
// VLAN and MPLS ones (the IPv4 steps would then take the limits too).
#pragma once

#include <cstdint>

#include "capture/decode/decode.hpp"
#include "capture/decode/reader.hpp"
#include "capture/decode/transport_layer.hpp"

namespace flowsketch::capture {
namespace {

// Decodes what follows an IP header (the first fragment's, or an unfragmented
// datagram's) at `r`, within the datagram's window: fills the ports and TCP
// flags; `out`'s key is the caller's to assign.
FLOWSKETCH_HOT SkipReason decode_ip_payload(Reader& r, std::uint8_t protocol,
                                            std::uint16_t& sport, std::uint16_t& dport,
                                            DecodedPacket& out) noexcept {
    return read_ports(r, protocol, sport, dport, out.tcp_flags);
}

}  // namespace
}  // namespace flowsketch::capture
