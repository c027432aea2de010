// The protocol numbers the decoder dispatches on: Ethernet types (link layer)
// and IP protocol numbers (network and transport layers).
// Private to decode.cpp, like the layer headers (see reader.hpp).
#pragma once

#include <cstdint>

namespace flowsketch::capture {
namespace {

namespace ethertype {
constexpr std::uint16_t ipv4 = 0x0800;
constexpr std::uint16_t ipv6 = 0x86DD;
constexpr std::uint16_t vlan = 0x8100;      // 802.1Q
constexpr std::uint16_t qinq = 0x88A8;      // 802.1ad service tag
constexpr std::uint16_t qinq_old = 0x9100;  // pre-standard double tagging
constexpr std::uint16_t mpls_unicast = 0x8847;
constexpr std::uint16_t mpls_multicast = 0x8848;
constexpr std::uint16_t pppoe_session = 0x8864;
constexpr std::uint16_t transparent_ethernet = 0x6558;  // GRE, Geneve: an Ethernet frame follows
constexpr std::uint16_t erspan_2 = 0x88BE;               // ERSPAN type I and II
constexpr std::uint16_t erspan_3 = 0x22EB;
}  // namespace ethertype

namespace ip_proto {
constexpr std::uint8_t hop_by_hop = 0;
constexpr std::uint8_t ipv4_in_ip = 4;
constexpr std::uint8_t tcp = 6;
constexpr std::uint8_t udp = 17;
constexpr std::uint8_t dccp = 33;
constexpr std::uint8_t ipv6_in_ip = 41;
constexpr std::uint8_t routing = 43;
constexpr std::uint8_t fragment = 44;
constexpr std::uint8_t gre = 47;
constexpr std::uint8_t auth = 51;  // AH
constexpr std::uint8_t dest_options = 60;
constexpr std::uint8_t sctp = 132;
constexpr std::uint8_t udp_lite = 136;
}  // namespace ip_proto

// UDP ports of the tunnels the decoder looks into (IANA).
namespace udp_port {
constexpr std::uint16_t vxlan = 4789;
constexpr std::uint16_t geneve = 6081;
constexpr std::uint16_t gtp_u = 2152;
}  // namespace udp_port

// The port that announces a tunnel in a UDP datagram, or 0: the destination
// port first, then the source port, since captures show tunnel endpoints
// answering from the tunnel port to another port (VXLAN, GTP-U), as Wireshark
// and Zeek read them.
constexpr std::uint16_t tunnel_port(std::uint16_t sport, std::uint16_t dport) noexcept {
    const auto announces = [](std::uint16_t port) {
        return port == udp_port::vxlan || port == udp_port::geneve || port == udp_port::gtp_u;
    };
    if (announces(dport)) return dport;
    return announces(sport) ? sport : 0;
}

}  // namespace
}  // namespace flowsketch::capture
