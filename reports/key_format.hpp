// How a key is written, in one place for every output: the fields a key spec
// keeps, in a fixed order, with their JSON/CSV/label names and text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/key/flow_key.hpp"
#include "core/key/key_spec.hpp"

namespace flowsketch::reports {

/// Name of an IP protocol for people ("tcp", "udp", "icmp", ...; else the number).
std::string protocol_name(std::uint8_t protocol);

/// An address of the key as text; under a prefix spec with the prefix length
/// ("198.51.100.0/24").
std::string format_address(const core::FlowKey& key, bool source, const core::KeySpec& spec);

/// One field of a key as an output writes it.
struct KeyFieldText {
    std::string_view name;  // "src", "dst", "sport", "dport", "proto", "vlan", "tunnel", "vni"
    std::string text;       // address text, or the number in decimal
    bool numeric = false;   // a number (unquoted in JSON)
};

/// The fields `spec` keeps, in the order src, dst, sport, dport, proto, vlan,
/// tunnel, vni; the protocol as its number, the VLAN id in decimal (0:
/// untagged), the tunnel type by name ("vxlan"; the `tunnel` key, whose src
/// and dst are the outer endpoints), the tunnel id in decimal (0: none).
std::vector<KeyFieldText> key_fields(const core::FlowKey& key, const core::KeySpec& spec);

/// "address" or "address:port" ("[v6]:port"): one side of a 5-tuple for people.
std::string endpoint(const core::FlowKey& key, bool source);

}  // namespace flowsketch::reports
