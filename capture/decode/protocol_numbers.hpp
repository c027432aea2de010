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
}  // namespace ethertype

namespace ip_proto {
constexpr std::uint8_t hop_by_hop = 0;
constexpr std::uint8_t tcp = 6;
constexpr std::uint8_t udp = 17;
constexpr std::uint8_t dccp = 33;
constexpr std::uint8_t routing = 43;
constexpr std::uint8_t fragment = 44;
constexpr std::uint8_t auth = 51;  // AH
constexpr std::uint8_t dest_options = 60;
constexpr std::uint8_t sctp = 132;
constexpr std::uint8_t udp_lite = 136;
}  // namespace ip_proto

}  // namespace
}  // namespace flowsketch::capture
