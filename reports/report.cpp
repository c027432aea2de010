#include "reports/report.hpp"

#include <string>

namespace flowsketch::reports {

const char* kind_name(ReportKind kind) noexcept {
    return kind == ReportKind::interval ? "interval" : "final";
}

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

}  // namespace flowsketch::reports
