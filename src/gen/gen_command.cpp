// `flowsketch gen`: command-line options and the runner around gen::generate().
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "src/cli/range.hpp"
#include "src/commands.hpp"
#include "src/gen/gen_config.hpp"
#include "src/gen/size_mix.hpp"
#include "src/gen/scenario_traffic.hpp"
#include "src/gen/traffic_generator.hpp"

namespace flowsketch::app {

namespace {

/// A finite number in [lo, hi] (or (lo, hi] when lo_open). CLI11's Range lets NaN through.
CLI::Validator finite_range(double lo, double hi, bool lo_open = false) {
    const std::string description = fmt::format("NUMBER in {}{}, {}]", lo_open ? "(" : "[", lo, hi);
    return CLI::Validator(
        [lo, hi, lo_open, description](std::string& text) -> std::string {
            double value = 0;
            const char* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, value);
            const bool in_range = lo_open ? value > lo : value >= lo;
            if (ec != std::errc{} || ptr != end || !std::isfinite(value) || !in_range ||
                value > hi) {
                return fmt::format("'{}' is not a {}", text, description);
            }
            return {};
        },
        description);
}

/// Digits only: CLI11 2.1 would otherwise wrap "-1" into a huge unsigned value.
CLI::Validator unsigned_integer() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            const bool digits = !text.empty() && text.size() <= 20 &&
                                text.find_first_not_of("0123456789") == std::string::npos;
            return digits ? std::string{} : fmt::format("'{}' is not a non-negative integer", text);
        },
        "");  // the help already says UINT
}

int run_gen(const gen::GenConfig& config) {
    try {
        const auto started = std::chrono::steady_clock::now();
        const gen::GenSummary summary = gen::generate(config);
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
        if (config.syn_flood > 0 || summary.scenario_packets > 0) {
            // What is the background's and what was added on top of it.
            const std::uint64_t background = summary.packets - summary.flood_packets - summary.scenario_packets;
            const std::uint64_t background_flows =
                summary.active_flows - summary.flood_packets - summary.scenario_flows;
            std::string added;
            std::string added_flows;
            if (config.syn_flood > 0) {
                added += fmt::format(" + {} SYN flood", summary.flood_packets);
                added_flows += fmt::format(" + {} flood", summary.flood_packets);
            }
            if (summary.scenario_packets > 0) {
                added += fmt::format(" + {} in {} scenarios", summary.scenario_packets, config.scenarios.size());
                added_flows += fmt::format(" + {} scenario", summary.scenario_flows);
            }
            fmt::print(stderr,
                       "flowsketch gen: wrote {} packets ({} background{}; {} bytes "
                       "on the wire, {} flows active: {} of {} background{}, {:.3f} s "
                       "of traffic) to {} and truth to {} in {:.2f} s\n",
                       summary.packets, background, added, summary.bytes, summary.active_flows, background_flows,
                       config.flows, added_flows, static_cast<double>(summary.last_time_us) / 1e6,
                       config.out_path, config.truth_path, took.count());
            return exit_ok;
        }
        fmt::print(stderr,
                   "flowsketch gen: wrote {} packets ({} bytes on the wire, {} of {} flows "
                   "active, {:.3f} s of traffic) to {} and truth to {} in {:.2f} s\n",
                   summary.packets, summary.bytes, summary.active_flows, config.flows,
                   static_cast<double>(summary.last_time_us) / 1e6, config.out_path,
                   config.truth_path, took.count());
        return exit_ok;
    } catch (const std::exception& e) {
        fmt::print(stderr, "flowsketch gen: error: {}\n", e.what());
        return exit_runtime_error;
    }
}

}  // namespace

void setup_gen_command(CLI::App& app, CommandRunner& runner) {
    // Options bind into a config that must outlive parsing: the callback shares it.
    auto config = std::make_shared<gen::GenConfig>();
    auto sizes_text = std::make_shared<std::string>(gen::format_size_mix(config->sizes));
    auto format_text = std::make_shared<std::string>("pcap");
    auto scenario_texts = std::make_shared<std::vector<std::string>>();
    CLI::App* cmd =
        app.add_subcommand("gen", "Write synthetic traffic (pcap) with exact per-flow truth (TSV)");

    cmd->add_option("--out", config->out_path, "Output pcap file")->required();
    cmd->add_option("--truth", config->truth_path,
                    "Truth file (default: the --out file with .truth.tsv appended)");
    cmd->add_option("--packets", config->packets, "Number of packets")
        ->check(unsigned_integer())
        ->check(cli::Range(std::uint64_t{1}, gen::max_packets))
        ->capture_default_str();
    cmd->add_option("--flows", config->flows, "Number of distinct flows (5-tuples)")
        ->check(unsigned_integer())
        ->check(cli::Range(std::uint64_t{1}, gen::max_flows))
        ->capture_default_str();
    cmd->add_option("--zipf", config->zipf, "Zipf exponent of flow popularity (0 = uniform)")
        ->check(finite_range(0, 100))
        ->capture_default_str();
    cmd->add_option("--sizes", *sizes_text,
                    "Frame-size mix SIZE:WEIGHT,... (frame bytes without FCS, 60-65535; a size "
                    "too small for a flow's headers is raised to fit them)")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
                try {
                    (void)gen::parse_size_mix(text);
                    return {};
                } catch (const std::invalid_argument& e) {
                    return e.what();
                }
            },
            "SIZE:WEIGHT,..."))
        ->capture_default_str();
    CLI::Option* rate =
        cmd->add_option("--rate", config->rate,
                        "Mean packets per second of packet time (Poisson). With --lifetimes it "
                        "sets the default --flow-rate (rate * flows / packets)")
            ->check(finite_range(0, 1e9, true))
            ->capture_default_str();
    cmd->add_option("--ipv6", config->ipv6_fraction, "Share of flows that are IPv6")
        ->check(finite_range(0, 1))
        ->capture_default_str();
    cmd->add_option("--vlan", config->vlan_fraction, "Share of flows with an 802.1Q tag")
        ->check(finite_range(0, 1))
        ->capture_default_str();
    cmd->add_option("--tcp", config->tcp_fraction, "Share of flows that are TCP (rest UDP)")
        ->check(finite_range(0, 1))
        ->capture_default_str();
    cmd->add_option("--snaplen", config->snaplen, "Bytes captured per packet")
        ->check(unsigned_integer())
        ->check(cli::Range(std::uint32_t{1}, gen::max_snaplen))
        ->capture_default_str();
    cmd->add_option("--format", *format_text,
                    "Capture file format: pcap (classic, microseconds) or pcapng (one interface, "
                    "enhanced packet blocks, as Wireshark writes)")
        ->check(CLI::IsMember({"pcap", "pcapng"}))
        ->capture_default_str();
    cmd->add_option("--start", config->start, "UNIX time of the first packet (seconds)")
        ->check(unsigned_integer())
        ->check(cli::Range(std::uint64_t{0}, std::uint64_t{0xffffffff}))
        ->capture_default_str();
    cmd->add_option("--seed", config->seed, "Random seed (same seed, same bytes)")
        ->check(unsigned_integer())
        ->capture_default_str();
    cmd->add_option("--syn-flood", config->syn_flood,
                    "Add this many single-packet TCP SYN flows (60-byte frames) from distinct "
                    "spoofed IPv4 sources to 198.51.100.80:80, at uniformly random times over "
                    "the span of the other traffic; on top of --packets (0: none)")
        ->type_name("FLOWS")
        ->check(unsigned_integer())
        ->check(cli::Range(std::uint64_t{0}, gen::max_syn_flood))
        ->capture_default_str();

    cmd->add_option("--scenario", *scenario_texts,
                    "Mix in a scenario (repeatable): syn-flood, carpet-bomb, horizontal-scan, vertical-scan or "
                    "surge, each with ,OPTION=VALUE... (packets, start, duration, target; sources, hosts, ports, "
                    "source, port as the kind takes them); on top of --packets; not with --lifetimes. The truth "
                    "gains a line per scenario and vlan, scenario columns (docs/gen.md)")
        ->type_name("NAME[,OPTION=VALUE...]")
        ->allow_extra_args(false);

    // Lifetime mode: flows arrive, live, pause and end. Any of its options turns it on.
    const char* const life_group = "Flow lifetimes (--lifetimes or any option below)";
    cmd->add_flag("--lifetimes", config->life.enabled,
                  "Flows arrive (Poisson), last a while (exponential), may pause once, end with "
                  "FIN/RST or just stop; the truth gains first_ns last_ns end_flag pause_ns gaps "
                  "(docs/gen.md). Needs --packets >= --flows: every flow sends a packet")
        ->group(life_group);
    std::vector<CLI::Option*> life_options;
    life_options.push_back(
        cmd->add_option("--flow-rate", config->life.flow_rate,
                        "New flows per second of packet time (Poisson; default rate * flows / "
                        "packets)")
            ->check(finite_range(0, 1e9, true))
            ->excludes(rate)
            ->group(life_group));
    life_options.push_back(
        cmd->add_option("--duration-mean", config->life.duration_mean,
                        "Mean flow duration in seconds, first to last packet without its pause "
                        "(exponential; a 1-packet flow lasts 0)")
            ->check(finite_range(0, 1e6))
            ->capture_default_str()
            ->group(life_group));
    life_options.push_back(
        cmd->add_option("--idle-gap-fraction", config->life.idle_gap_fraction,
                        "Share of flows (with >= 2 packets) that pause once, between two "
                        "uniformly chosen consecutive packets")
            ->check(finite_range(0, 1))
            ->capture_default_str()
            ->group(life_group));
    life_options.push_back(
        cmd->add_option("--idle-gap", config->life.idle_gap,
                        "Pause length G in seconds: uniform in [0.5 G, 1.5 G], so pauses fall "
                        "on both sides of a timeout near G")
            ->check(finite_range(0, 1e6, true))
            ->capture_default_str()
            ->group(life_group));
    CLI::Option* fin_option =
        cmd->add_option("--fin-fraction", config->life.fin_fraction,
                        "Share of TCP flows whose last packet carries FIN|ACK")
            ->check(finite_range(0, 1))
            ->capture_default_str()
            ->group(life_group);
    CLI::Option* rst_option =
        cmd->add_option("--rst-fraction", config->life.rst_fraction,
                        "Share of TCP flows whose last packet carries RST|ACK (fin + rst <= 1; "
                        "the rest just stop; a default gives way to the other's explicit value)")
            ->check(finite_range(0, 1))
            ->capture_default_str()
            ->group(life_group);
    life_options.push_back(fin_option);
    life_options.push_back(rst_option);
    life_options.push_back(
        cmd->add_option("--gap-min", config->life.gap_min,
                        "The truth lists every silence within a flow longer than this many "
                        "seconds, which makes it exact for any idle timeout >= it (default "
                        "idle-gap / 4)")
            ->check(finite_range(0, 1e6))
            ->group(life_group));
    cmd->footer(
        "Truth (TSV): '# name value' lines, then proto src dst sport dport packets bytes, one "
        "line per flow, by packets descending; --syn-flood flows are lines with 1 packet of 60 "
        "bytes to 198.51.100.80:80. With --lifetimes also first_ns last_ns "
        "end_flag pause_ns gaps: first/last packet in Unix ns as in the pcap, fin|rst|-, the "
        "scheduled pause's silence in ns (0: none), and START_NS:END_NS,... for every silence "
        "longer than gap_min_ns (- if none). For an idle timeout T >= gap_min_ns a flow is "
        "active at t iff it has a packet p with p <= t <= p + T. See docs/gen.md.");

    cmd->callback([config, sizes_text, format_text, scenario_texts, life_options, fin_option, rst_option, &runner] {
        for (const CLI::Option* option : life_options) {
            if (option->count() > 0) config->life.enabled = true;
        }
        for (const std::string& text : *scenario_texts) {
            try {
                config->scenarios.push_back(gen::parse_scenario(text));
            } catch (const std::invalid_argument& e) {
                throw CLI::ValidationError("--scenario", e.what());
            }
        }
        if (config->life.enabled && !config->scenarios.empty()) {
            throw CLI::ValidationError("--scenario", "is not available with --lifetimes");
        }
        try {
            gen::check_scenario_flows(*config);
        } catch (const std::invalid_argument& e) {
            throw CLI::ValidationError("--scenario", e.what());
        }
        if (config->life.enabled) {
            // A default gives way to an explicit value: --fin-fraction 1 alone means
            // every TCP flow ends with FIN, not an error about the RST default.
            gen::LifetimeConfig& life = config->life;
            const bool fin_given = fin_option->count() > 0;
            const bool rst_given = rst_option->count() > 0;
            if (fin_given && !rst_given) {
                life.rst_fraction = std::min(life.rst_fraction, 1 - life.fin_fraction);
            }
            if (rst_given && !fin_given) {
                life.fin_fraction = std::min(life.fin_fraction, 1 - life.rst_fraction);
            }
            if (life.fin_fraction + life.rst_fraction > 1) {
                throw CLI::ValidationError("--fin-fraction, --rst-fraction",
                                           "their sum must be at most 1");
            }
            if (config->packets > gen::max_lifetime_packets) {
                throw CLI::ValidationError(
                    "--packets", fmt::format("with --lifetimes must be at most {}",
                                             gen::max_lifetime_packets));
            }
            if (config->packets < config->flows) {
                throw CLI::ValidationError(
                    "--packets", "with --lifetimes must be >= --flows (every flow sends a packet)");
            }
        }
        config->sizes = gen::parse_size_mix(*sizes_text);  // validated above
        config->pcapng = *format_text == "pcapng";
        if (config->truth_path.empty()) config->truth_path = config->out_path + ".truth.tsv";
        if (config->truth_path == config->out_path) {
            throw CLI::ValidationError("--truth", "must name a different file than --out");
        }
        runner = [config] { return run_gen(*config); };
    });
}

}  // namespace flowsketch::app
