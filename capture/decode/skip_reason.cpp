#include "capture/decode/skip_reason.hpp"

#include <array>

namespace flowsketch::capture {
namespace {

constexpr std::array<std::string_view, inner_reason_count> skip_reason_names = {
    "none",
    "unsupported_link_type",
    "non_ip",
    "truncated_link",
    "link_limit",
    "truncated_ip",
    "invalid_ip",
    "ipv6_extension_limit",
    "truncated_transport",
    "invalid_transport",
    "truncated_tunnel",
    "invalid_tunnel",
    "tunnel_limit",
};

}  // namespace

std::string_view skip_reason_name(SkipReason reason) noexcept {
    const auto index = static_cast<std::size_t>(reason);
    return index < skip_reason_names.size() ? skip_reason_names[index] : "unknown";
}

}  // namespace flowsketch::capture
