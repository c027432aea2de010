#include "core/key/flow_key.hpp"

#include <arpa/inet.h>

namespace flowsketch::core {

std::string format_address(const FlowKey& key, bool source) {
    const auto& bytes = source ? key.src : key.dst;
    char text[INET6_ADDRSTRLEN] = {};
    const int af = key.family == AddressFamily::ipv6 ? AF_INET6 : AF_INET;
    if (inet_ntop(af, bytes.data(), text, sizeof text) == nullptr) return "?";
    return text;
}

std::strong_ordering compare_keys(const FlowKey& a, const FlowKey& b) noexcept {
    const int c = std::memcmp(&a, &b, sizeof(FlowKey));
    return c < 0 ? std::strong_ordering::less
                 : (c > 0 ? std::strong_ordering::greater : std::strong_ordering::equal);
}

}  // namespace flowsketch::core
