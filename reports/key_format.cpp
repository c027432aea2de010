#include "reports/key_format.hpp"

#include <fmt/format.h>

namespace flowsketch::reports {

std::string protocol_name(std::uint8_t protocol) {
    switch (protocol) {
        case 1: return "icmp";
        case 2: return "igmp";
        case 4: return "ipip";
        case 6: return "tcp";
        case 17: return "udp";
        case 33: return "dccp";
        case 41: return "ipv6";
        case 47: return "gre";
        case 50: return "esp";
        case 51: return "ah";
        case 58: return "icmpv6";
        case 132: return "sctp";
        case 136: return "udplite";
        default: return std::to_string(protocol);
    }
}

std::string format_address(const core::FlowKey& key, bool source, const core::KeySpec& spec) {
    std::string text = core::format_address(key, source);
    if (spec.is_prefix(source, key.family)) text += "/" + std::to_string(spec.prefix(source, key.family));
    return text;
}

std::vector<KeyFieldText> key_fields(const core::FlowKey& key, const core::KeySpec& spec) {
    std::vector<KeyFieldText> fields;
    // The `tunnel` key's addresses are the outer endpoints, whole.
    if (spec.has(core::key_src) || spec.is_tunnel()) fields.push_back({"src", format_address(key, true, spec), false});
    if (spec.has(core::key_dst) || spec.is_tunnel()) fields.push_back({"dst", format_address(key, false, spec), false});
    if (spec.has(core::key_sport)) fields.push_back({"sport", std::to_string(key.src_port), true});
    if (spec.has(core::key_dport)) fields.push_back({"dport", std::to_string(key.dst_port), true});
    if (spec.has(core::key_proto)) fields.push_back({"proto", std::to_string(key.protocol), true});
    if (spec.has(core::key_vlan)) fields.push_back({"vlan", std::to_string(key.vlan), true});
    if (spec.is_tunnel()) fields.push_back({"tunnel", std::string(core::tunnel_code_name(key.protocol)), false});
    if (spec.has(core::key_vni)) fields.push_back({"vni", std::to_string(spec.vni_of(key)), true});
    return fields;
}

std::string endpoint(const core::FlowKey& key, bool source) {
    const std::string address = core::format_address(key, source);
    const std::uint16_t port = source ? key.src_port : key.dst_port;
    const bool has_ports = key.src_port != 0 || key.dst_port != 0;
    if (!has_ports) return address;
    if (key.family == core::AddressFamily::ipv6) return fmt::format("[{}]:{}", address, port);
    return fmt::format("{}:{}", address, port);
}

}  // namespace flowsketch::reports
