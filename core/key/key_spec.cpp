#include "core/key/key_spec.hpp"

#include <bit>
#include <charconv>
#include <cstddef>
#include <stdexcept>

namespace flowsketch::core {
namespace {

constexpr std::uint8_t five_tuple_fields = key_src | key_dst | key_sport | key_dport | key_proto;
constexpr std::uint8_t all_fields = five_tuple_fields | key_vlan | key_vni | key_tunnel;
constexpr std::uint8_t address_fields = key_src | key_dst;
constexpr std::uint8_t port_fields = key_sport | key_dport;
constexpr std::uint8_t default_ipv6_prefix = 64;

void keep_prefix(std::uint8_t* field, std::uint8_t bits) noexcept {
    for (std::uint8_t byte = 0; byte < 16; ++byte) {
        const int left = int{bits} - 8 * byte;
        field[byte] = static_cast<std::uint8_t>(left >= 8 ? 0xff : left <= 0 ? 0 : 0xff << (8 - left));
    }
}

[[noreturn]] void bad_spec(std::string_view text, std::string_view why) {
    throw std::invalid_argument("key spec '" + std::string(text) + "': " + std::string(why));
}

// An error in a part of the spec (`base`) as an error of the whole spec the user wrote.
[[noreturn]] void bad_part(std::string_view text, std::string_view base, const std::invalid_argument& e) {
    std::string message = e.what();
    const std::string named = "key spec '" + std::string(base) + "': ";
    if (message.rfind(named, 0) == 0) message = message.substr(named.size());
    bad_spec(text, message);
}

// "N" or "N,M" after an address field's '/'.
void parse_prefixes(std::string_view spec, std::string_view text, std::uint8_t& v4, std::uint8_t& v6) {
    const auto number = [&](std::string_view digits, unsigned max) {
        unsigned value = 0;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size()) {
            bad_spec(spec, "a prefix length is a number (dst/24, or dst/24,64 for IPv4 and IPv6)");
        }
        if (value > max) {
            bad_spec(spec, max == 32 ? "an IPv4 prefix length is at most 32" : "an IPv6 prefix length is at most 128");
        }
        return static_cast<std::uint8_t>(value);
    };
    const std::size_t comma = text.find(',');
    v4 = number(text.substr(0, comma), 32);
    v6 = comma == std::string_view::npos ? default_ipv6_prefix : number(text.substr(comma + 1), 128);
}

}  // namespace

KeySpec::KeySpec(std::uint8_t fields, std::uint8_t src_prefix_v4, std::uint8_t src_prefix_v6,
                 std::uint8_t dst_prefix_v4, std::uint8_t dst_prefix_v6)
    : fields_(fields),
      src_prefix_v4_(src_prefix_v4),
      src_prefix_v6_(src_prefix_v6),
      dst_prefix_v4_(dst_prefix_v4),
      dst_prefix_v6_(dst_prefix_v6) {
    if (fields == 0 || (fields & ~all_fields) != 0) throw std::invalid_argument("a key spec keeps at least one field");
    if (src_prefix_v4 > 32 || dst_prefix_v4 > 32 || src_prefix_v6 > 128 || dst_prefix_v6 > 128) {
        throw std::invalid_argument("key spec prefix length out of range");
    }
    if ((fields & key_tunnel) != 0 && (fields & five_tuple_fields) != 0) {
        throw std::invalid_argument("the tunnel key keeps the outer endpoints, beside only the VLAN id and the tunnel id");
    }
    if ((fields & key_vni) != 0 && (fields & address_fields) != 0 && (fields & port_fields) != 0) {
        throw std::invalid_argument("no room for the tunnel id beside addresses and ports");
    }
    masks_ = {mask_for(AddressFamily::ipv4), mask_for(AddressFamily::ipv6)};
    identity_ = fields == five_tuple_fields && src_prefix_v4 == 32 && dst_prefix_v4 == 32 && src_prefix_v6 == 128 &&
                dst_prefix_v6 == 128;
}

KeySpec::Mask KeySpec::mask_for(AddressFamily family) const noexcept {
    FlowKey ones;
    if (has(key_src)) keep_prefix(ones.src.data(), prefix(true, family));
    if (has(key_dst)) keep_prefix(ones.dst.data(), prefix(false, family));
    if (has(key_sport)) ones.src_port = 0xffff;
    if (has(key_dport)) ones.dst_port = 0xffff;
    if (has(key_proto)) ones.protocol = 0xff;
    if (has(key_vlan)) ones.vlan = 0xffff;
    if (has(key_tunnel)) {  // the outer endpoints, whole, and the tunnel type in the protocol byte
        keep_prefix(ones.src.data(), family == AddressFamily::ipv6 ? 128 : 32);
        keep_prefix(ones.dst.data(), family == AddressFamily::ipv6 ? 128 : 32);
        ones.protocol = 0xff;
    }
    // The family keeps an IPv4 address apart from the IPv6 address with the
    // same leading bytes; a key without addresses is one key across families.
    if (has(key_src) || has(key_dst) || has(key_tunnel)) ones.family = static_cast<AddressFamily>(0xff);
    return std::bit_cast<Mask>(ones);
}

namespace {

std::uint8_t field_named(std::string_view name) noexcept {
    if (name == "src") return key_src;
    if (name == "dst") return key_dst;
    if (name == "sport") return key_sport;
    if (name == "dport") return key_dport;
    if (name == "proto") return key_proto;
    return 0;
}

const char* field_name(std::uint8_t field) noexcept {
    switch (field) {
        case key_src: return "src";
        case key_dst: return "dst";
        case key_sport: return "sport";
        case key_dport: return "dport";
        default: return "proto";
    }
}

}  // namespace

KeySpec KeySpec::with_distinct(KeyField field) const {
    if (field_named(field_name(field)) != field) throw std::invalid_argument("a distinct count is of one field");
    const bool address = field == key_src || field == key_dst;
    const bool source = field == key_src;
    const bool whole = has(field) && (!address || (!is_prefix(source, AddressFamily::ipv4) &&
                                                   !is_prefix(source, AddressFamily::ipv6)));
    if (whole) {
        throw std::invalid_argument(std::string("the key keeps ") + field_name(field) +
                                    " whole: each key has one value of it");
    }
    KeySpec spec = *this;
    spec.distinct_ = field;
    return spec;
}

KeySpec KeySpec::parse(std::string_view text) {
    const std::size_t colon = text.find(':');
    if (colon != std::string_view::npos) {
        const std::string_view option = text.substr(colon + 1);
        constexpr std::string_view prefix = "distinct=";
        if (option.substr(0, prefix.size()) != prefix) bad_spec(text, "expected KEY:distinct=FIELD");
        const std::uint8_t field = field_named(option.substr(prefix.size()));
        if (field == 0) bad_spec(text, "distinct counts one of src, dst, sport, dport or proto");
        const std::string_view base = text.substr(0, colon);
        KeySpec key = five_tuple();
        try {
            key = parse(base);
        } catch (const std::invalid_argument& e) {
            bad_part(text, base, e);  // names the whole spec, not its key part
        }
        try {
            return key.with_distinct(static_cast<KeyField>(field));
        } catch (const std::invalid_argument& e) {
            bad_spec(text, e.what());
        }
    }
    constexpr std::string_view plus_vni = "+vni";
    if (text.size() > plus_vni.size() && text.substr(text.size() - plus_vni.size()) == plus_vni) {
        const std::string_view base = text.substr(0, text.size() - plus_vni.size());
        KeySpec key = five_tuple();
        try {
            key = parse(base);
        } catch (const std::invalid_argument& e) {
            bad_part(text, base, e);
        }
        if (key.has(key_vni)) bad_spec(text, "the tunnel id is kept once (vni, or +vni after another key)");
        if ((key.fields_ & address_fields) != 0 && (key.fields_ & port_fields) != 0) {
            bad_spec(text, "the 40-byte key has no room for a tunnel id beside an IPv6 5-tuple; "
                           "use pair+vni, dst+vni or src+vni (with --key 5tuple for the flows)");
        }
        key.fields_ = static_cast<std::uint8_t>(key.fields_ | key_vni);
        key.masks_ = {key.mask_for(AddressFamily::ipv4), key.mask_for(AddressFamily::ipv6)};
        key.identity_ = false;
        return key;
    }
    constexpr std::string_view plus_vlan = "+vlan";
    if (text.size() > plus_vlan.size() && text.substr(text.size() - plus_vlan.size()) == plus_vlan) {
        const std::string_view base = text.substr(0, text.size() - plus_vlan.size());
        KeySpec key = five_tuple();
        try {
            key = parse(base);
        } catch (const std::invalid_argument& e) {
            bad_part(text, base, e);
        }
        if (key.keeps_vlan()) bad_spec(text, "the VLAN id is kept once (vlan, or +vlan after another key)");
        key.fields_ = static_cast<std::uint8_t>(key.fields_ | key_vlan);
        key.masks_ = {key.mask_for(AddressFamily::ipv4), key.mask_for(AddressFamily::ipv6)};
        key.identity_ = false;
        return key;
    }
    if (text == "vlan") return KeySpec(key_vlan);
    if (text == "vni") return KeySpec(key_vni);
    if (text == "tunnel") return KeySpec(key_tunnel);
    if (text == "5tuple") return five_tuple();
    if (text == "pair") return KeySpec(key_src | key_dst);
    if (text == "sport") return KeySpec(key_sport);
    if (text == "dport") return KeySpec(key_dport);
    if (text == "proto") return KeySpec(key_proto);
    const std::size_t slash = text.find('/');
    const std::string_view field = text.substr(0, slash);
    if (field != "src" && field != "dst") {
        bad_spec(text, "expected 5tuple, src, dst, pair, src/N, dst/N, sport, dport, proto, vlan, vni or "
                       "tunnel, optionally with +vlan and +vni");
    }
    std::uint8_t v4 = 32;
    std::uint8_t v6 = 128;
    if (slash != std::string_view::npos) parse_prefixes(text, text.substr(slash + 1), v4, v6);
    return field == "src" ? KeySpec(key_src, v4, v6, 32, 128) : KeySpec(key_dst, 32, 128, v4, v6);
}

std::string KeySpec::name() const {
    if (distinct_ != 0) return key_only().name() + ":distinct=" + field_name(distinct_);
    if (fields_ == key_vlan) return "vlan";
    if (fields_ == key_vni) return "vni";
    if (fields_ == key_tunnel) return "tunnel";
    if (has(key_vni)) {
        KeySpec base = *this;
        base.fields_ = static_cast<std::uint8_t>(fields_ & ~key_vni);
        base.identity_ = false;
        return base.name() + "+vni";
    }
    if (has(key_vlan)) {
        KeySpec base = *this;
        base.fields_ = static_cast<std::uint8_t>(fields_ & ~key_vlan);
        base.identity_ = base.fields_ == five_tuple_fields && !is_prefix(true, AddressFamily::ipv4) &&
                         !is_prefix(true, AddressFamily::ipv6) && !is_prefix(false, AddressFamily::ipv4) &&
                         !is_prefix(false, AddressFamily::ipv6);
        return base.name() + "+vlan";
    }
    if (identity_) return "5tuple";
    const auto address = [&](const char* label, bool source) {
        const std::uint8_t v4 = prefix(source, AddressFamily::ipv4);
        const std::uint8_t v6 = prefix(source, AddressFamily::ipv6);
        if (v4 == 32 && v6 == 128) return std::string(label);
        return std::string(label) + "/" + std::to_string(v4) + "," + std::to_string(v6);
    };
    std::string name;
    const auto add = [&](const std::string& part) { name += (name.empty() ? "" : "+") + part; };
    if (fields_ == (key_src | key_dst) && !is_prefix(true, AddressFamily::ipv4) &&
        !is_prefix(true, AddressFamily::ipv6) && !is_prefix(false, AddressFamily::ipv4) &&
        !is_prefix(false, AddressFamily::ipv6)) {
        return "pair";
    }
    if (has(key_src)) add(address("src", true));
    if (has(key_dst)) add(address("dst", false));
    if (has(key_sport)) add("sport");
    if (has(key_dport)) add("dport");
    if (has(key_proto)) add("proto");
    return name;
}

}  // namespace flowsketch::core
