#include "capture/decode/tunnel_counts.hpp"

namespace flowsketch::capture {
namespace {

constexpr std::array<std::string_view, tunnel_type_count> tunnel_type_names = {
    "gre", "erspan", "vxlan", "geneve", "ip_in_ip", "gtp_u",
};

}  // namespace

std::string_view tunnel_type_name(TunnelType type) noexcept {
    const auto index = static_cast<std::size_t>(type);
    return index < tunnel_type_names.size() ? tunnel_type_names[index] : "unknown";
}

}  // namespace flowsketch::capture
