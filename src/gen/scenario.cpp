// Scenario text: parsing with defaults and checks, and the canonical form.
#include "src/gen/scenario.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace flowsketch::gen {
namespace {

constexpr std::array<std::string_view, 5> kind_names = {"syn-flood", "carpet-bomb", "horizontal-scan",
                                                        "vertical-scan", "surge"};

std::uint32_t ipv4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    return std::uint32_t{a} << 24 | std::uint32_t{b} << 16 | std::uint32_t{c} << 8 | d;
}

// The background's addresses (flows.cpp) and the spoofed sources': a scenario
// address outside them cannot make a flow equal to one of theirs.
struct Block {
    std::uint32_t first;
    std::uint32_t last;
    const char* name;
};
const std::array<Block, 3> taken = {{{ipv4(10, 0, 0, 0), ipv4(10, 255, 255, 255), "10.0.0.0/8"},
                                     {ipv4(198, 18, 0, 0), ipv4(198, 19, 255, 255), "198.18.0.0/15"},
                                     {ipv4(100, 64, 0, 0), ipv4(100, 127, 255, 255), "100.64.0.0/10"}}};

std::string dotted(std::uint32_t address) {
    return fmt::format("{}.{}.{}.{}", address >> 24, (address >> 16) & 0xff, (address >> 8) & 0xff, address & 0xff);
}

[[noreturn]] void bad(std::string_view text, const std::string& why) {
    throw std::invalid_argument("scenario '" + std::string(text) + "': " + why);
}

std::uint64_t integer(std::string_view text, std::string_view name, std::string_view value, std::uint64_t max) {
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (value.empty() || error != std::errc{} || end != value.data() + value.size() || number > max) {
        bad(text, fmt::format("{} is an integer from 1 to {}", name, max));
    }
    if (number == 0) bad(text, fmt::format("{} is an integer from 1 to {}", name, max));
    return number;
}

double seconds(std::string_view text, std::string_view name, std::string_view value) {
    double number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (value.empty() || error != std::errc{} || end != value.data() + value.size() || !std::isfinite(number) ||
        number < 0 || number > 1e6) {
        bad(text, fmt::format("{} is a number of seconds from 0 to 1000000", name));
    }
    return number;
}

std::uint32_t address(std::string_view text, std::string_view name, std::string_view value) {
    in_addr parsed{};
    const std::string copy(value);
    if (inet_pton(AF_INET, copy.c_str(), &parsed) != 1) bad(text, fmt::format("{} is an IPv4 address", name));
    return ntohl(parsed.s_addr);
}

// Which options each kind takes, beside packets, start, duration and target.
bool takes(ScenarioKind kind, std::string_view option) {
    switch (kind) {
        case ScenarioKind::syn_flood:
        case ScenarioKind::carpet_bomb:
            return option == "sources" || option == "port";
        case ScenarioKind::horizontal_scan:
            return option == "hosts" || option == "source" || option == "port";
        case ScenarioKind::vertical_scan:
            return option == "ports" || option == "source";
        case ScenarioKind::surge:
            return option == "source" || option == "port";
    }
    return false;
}

std::string_view count_name(ScenarioKind kind) {
    switch (kind) {
        case ScenarioKind::horizontal_scan: return "hosts";
        case ScenarioKind::vertical_scan: return "ports";
        case ScenarioKind::surge: return "";
        default: return "sources";
    }
}

// Flows a scenario has: one per source, host or port; a carpet bomb's sources
// cycle over the /24's 256 hosts.
std::uint64_t flows_of(const Scenario& s) {
    return s.kind == ScenarioKind::carpet_bomb ? std::max<std::uint64_t>(s.count, 256) : s.count;
}

void check_addresses(std::string_view text, std::string_view name, std::uint32_t first, std::uint32_t last) {
    for (const Block& block : taken) {
        if (first <= block.last && last >= block.first) {
            bad(text, fmt::format("{} {} is in {}, which the background or the spoofed sources use", name,
                                  first == last ? dotted(first) : dotted(first) + "-" + dotted(last), block.name));
        }
    }
}

}  // namespace

std::string_view scenario_name(ScenarioKind kind) noexcept { return kind_names[static_cast<std::size_t>(kind)]; }

Scenario parse_scenario(std::string_view text) {
    const std::string_view name = text.substr(0, text.find(','));
    const auto found = std::find(kind_names.begin(), kind_names.end(), name);
    if (found == kind_names.end()) {
        bad(text, "expected syn-flood, carpet-bomb, horizontal-scan, vertical-scan or surge, then ,OPTION=VALUE...");
    }
    Scenario s;
    s.kind = static_cast<ScenarioKind>(found - kind_names.begin());
    bool packets_given = false;
    bool count_given = false;
    std::vector<std::string_view> seen;
    std::string_view rest = name.size() < text.size() ? text.substr(name.size() + 1) : std::string_view{};
    while (!rest.empty()) {
        const std::string_view option = rest.substr(0, rest.find(','));
        rest = option.size() < rest.size() ? rest.substr(option.size() + 1) : std::string_view{};
        const std::size_t equals = option.find('=');
        if (equals == std::string_view::npos) bad(text, fmt::format("expected OPTION=VALUE, not '{}'", option));
        const std::string_view key = option.substr(0, equals);
        const std::string_view value = option.substr(equals + 1);
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) bad(text, fmt::format("{} is given twice", key));
        seen.push_back(key);
        if (key == "packets") {
            s.packets = integer(text, key, value, max_scenario_packets);
            packets_given = true;
        } else if (key == "start") {
            s.start = seconds(text, key, value);
        } else if (key == "duration") {
            s.duration = seconds(text, key, value);
        } else if (key == "target") {
            s.target = address(text, key, value);
        } else if (!takes(s.kind, key)) {
            bad(text, fmt::format("{} takes no option '{}'", name, key));
        } else if (key == "source") {
            s.source = address(text, key, value);
        } else if (key == "port") {
            s.port = static_cast<std::uint16_t>(integer(text, key, value, 65535));
        } else {  // sources, hosts or ports
            const std::uint64_t max = key == "sources" ? max_spoofed_sources : key == "hosts" ? (1U << 20) : 65535;
            s.count = static_cast<std::uint32_t>(integer(text, key, value, max));
            count_given = true;
        }
    }

    // Defaults (docs/gen.md): documentation and private addresses no background flow uses.
    switch (s.kind) {
        case ScenarioKind::syn_flood:
            if (!packets_given) s.packets = 20'000;
            if (!count_given) s.count = static_cast<std::uint32_t>(std::min<std::uint64_t>(s.packets, max_spoofed_sources));
            if (s.target == 0) s.target = ipv4(203, 0, 113, 10);
            if (s.port == 0) s.port = 80;
            break;
        case ScenarioKind::carpet_bomb:
            if (!packets_given) s.packets = 20'000;
            if (!count_given) s.count = 2'000;
            if (s.target == 0) s.target = ipv4(192, 0, 2, 0);
            s.target &= 0xffffff00U;
            if (s.port == 0) s.port = 80;
            break;
        case ScenarioKind::horizontal_scan:
            if (!count_given) s.count = 1'000;
            if (!packets_given) s.packets = s.count;
            if (s.source == 0) s.source = ipv4(203, 0, 113, 66);
            if (s.target == 0) s.target = ipv4(172, 16, 0, 1);
            if (s.port == 0) s.port = 22;
            break;
        case ScenarioKind::vertical_scan:
            if (!count_given) s.count = 1'000;
            if (!packets_given) s.packets = s.count;
            if (s.source == 0) s.source = ipv4(203, 0, 113, 77);
            if (s.target == 0) s.target = ipv4(172, 31, 255, 1);
            break;
        case ScenarioKind::surge:
            if (!packets_given) s.packets = 20'000;
            s.count = 1;
            if (s.source == 0) s.source = ipv4(203, 0, 113, 99);
            if (s.target == 0) s.target = ipv4(172, 30, 0, 1);
            if (s.port == 0) s.port = 443;
            break;
    }
    if (flows_of(s) > s.packets) {
        bad(text, fmt::format("{} flows need at least as many packets (packets={})", flows_of(s), s.packets));
    }
    const std::uint32_t last_target =
        s.kind == ScenarioKind::carpet_bomb ? s.target | 0xff
        : s.kind == ScenarioKind::horizontal_scan ? s.target + (s.count - 1)
                                                  : s.target;
    if (last_target < s.target) bad(text, "the scanned hosts run past 255.255.255.255");
    check_addresses(text, "target", s.target, last_target);
    if (s.source != 0) check_addresses(text, "source", s.source, s.source);
    return s;
}

std::string scenario_text(const Scenario& s) {
    std::string text = fmt::format("{},packets={}", scenario_name(s.kind), s.packets);
    const std::string_view count = count_name(s.kind);
    if (!count.empty()) text += fmt::format(",{}={}", count, s.count);
    if (s.kind == ScenarioKind::horizontal_scan || s.kind == ScenarioKind::vertical_scan ||
        s.kind == ScenarioKind::surge) {
        text += ",source=" + dotted(s.source);
    }
    text += ",target=" + dotted(s.target);
    if (s.kind != ScenarioKind::vertical_scan) text += fmt::format(",port={}", s.port);
    if (s.start >= 0) text += fmt::format(",start={}", s.start);
    if (s.duration >= 0) text += fmt::format(",duration={}", s.duration);
    return text;
}

}  // namespace flowsketch::gen
