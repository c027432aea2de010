// The scenarios of `flowsketch gen` (`--scenario NAME[,OPTION=VALUE...]`,
// repeatable): attacks and an onset mixed into the background traffic, each
// with its own flows and times. This file is what a scenario is and how it is
// written; scenario_traffic.hpp makes its packets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace flowsketch::gen {

enum class ScenarioKind : std::uint8_t {
    syn_flood,        // many spoofed sources -> one host and port
    carpet_bomb,      // many spoofed sources -> every host of one /24
    horizontal_scan,  // one source -> one port on many hosts
    vertical_scan,    // one source -> many ports on one host
    surge,            // one new heavy UDP flow, from the middle of the run by default
};

/// One `--scenario`, its defaults filled in (docs/gen.md lists them).
/// Addresses are IPv4 in host order.
struct Scenario {
    ScenarioKind kind = ScenarioKind::syn_flood;
    std::uint64_t packets = 0;
    /// Sources (syn-flood, carpet-bomb), hosts (horizontal-scan), ports
    /// (vertical-scan); 1 for a surge.
    std::uint32_t count = 0;
    std::uint32_t source = 0;  // scans and surge (the others' sources are spoofed)
    std::uint32_t target = 0;  // the victim; carpet-bomb: its /24; horizontal-scan: the first host
    std::uint16_t port = 0;    // destination port (not vertical-scan's)
    double start = -1;         // seconds after the run's first packet; < 0: the default
    double duration = -1;      // seconds; < 0: to the background's last packet
};

/// Spoofed sources are drawn from 100.64.0.0/10, one address each: at most this many.
inline constexpr std::uint32_t max_spoofed_sources = 1U << 22;
/// Packets of all scenarios together (16 bytes each are kept while generating).
inline constexpr std::uint64_t max_scenario_packets = 50'000'000;

/// Parses `NAME[,OPTION=VALUE...]`. Throws std::invalid_argument with a
/// message naming the text and what is wrong with it.
Scenario parse_scenario(std::string_view text);

/// The scenario as `--scenario` text, every option written (start and
/// duration only when given): parse_scenario gives it back.
std::string scenario_text(const Scenario& scenario);

std::string_view scenario_name(ScenarioKind kind) noexcept;

/// Whether the kind's packets are TCP SYNs (all but a surge, which is UDP).
inline bool sends_syns(ScenarioKind kind) noexcept { return kind != ScenarioKind::surge; }

}  // namespace flowsketch::gen
