// GenConfig's resolved lifetime defaults and its canonical command line.
#include "src/gen/gen_config.hpp"

#include <fmt/format.h>

namespace flowsketch::gen {

LifetimeConfig resolved_lifetimes(const GenConfig& config) {
    LifetimeConfig life = config.life;
    if (!(life.flow_rate > 0)) {
        life.flow_rate =
            config.rate * static_cast<double>(config.flows) / static_cast<double>(config.packets);
    }
    if (life.gap_min < 0) life.gap_min = life.idle_gap / 4;
    return life;
}

std::string canonical_command(const GenConfig& c) {
    // A flood or pcapng adds its option only when used: other runs' truth never names it.
    std::string extra =
        (c.syn_flood > 0 ? fmt::format(" --syn-flood {}", c.syn_flood) : std::string{}) +
        (c.pcapng ? " --format pcapng" : "");
    for (const Scenario& scenario : c.scenarios) extra += " --scenario " + scenario_text(scenario);
    if (c.life.enabled) {
        // --rate only sets the default --flow-rate, which is written resolved instead.
        const LifetimeConfig life = resolved_lifetimes(c);
        return fmt::format(
            "flowsketch gen --lifetimes --packets {} --flows {} --zipf {} --sizes {} "
            "--flow-rate {} --duration-mean {} --idle-gap-fraction {} --idle-gap {} "
            "--fin-fraction {} --rst-fraction {} --gap-min {} --ipv6 {} --vlan {} --tcp {} "
            "--snaplen {} --start {} --seed {}{}",
            c.packets, c.flows, c.zipf, format_size_mix(c.sizes), life.flow_rate,
            life.duration_mean, life.idle_gap_fraction, life.idle_gap, life.fin_fraction,
            life.rst_fraction, life.gap_min, c.ipv6_fraction, c.vlan_fraction, c.tcp_fraction,
            c.snaplen, c.start, c.seed, extra);
    }
    return fmt::format(
        "flowsketch gen --packets {} --flows {} --zipf {} --sizes {} --rate {} --ipv6 {} "
        "--vlan {} --tcp {} --snaplen {} --start {} --seed {}{}",
        c.packets, c.flows, c.zipf, format_size_mix(c.sizes), c.rate, c.ipv6_fraction,
        c.vlan_fraction, c.tcp_fraction, c.snaplen, c.start, c.seed, extra);
}

}  // namespace flowsketch::gen
