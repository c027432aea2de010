// `flowsketch gen`: command-line options and the runner around gen::generate().
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <system_error>

#include "src/commands.hpp"
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
    CLI::App* cmd =
        app.add_subcommand("gen", "Write synthetic traffic (pcap) with exact per-flow truth (TSV)");

    cmd->add_option("--out", config->out_path, "Output pcap file")->required();
    cmd->add_option("--truth", config->truth_path,
                    "Truth file (default: the --out file with .truth.tsv appended)");
    cmd->add_option("--packets", config->packets, "Number of packets")
        ->check(unsigned_integer())
        ->check(CLI::Range(std::uint64_t{1}, gen::max_packets))
        ->capture_default_str();
    cmd->add_option("--flows", config->flows, "Number of distinct flows (5-tuples)")
        ->check(unsigned_integer())
        ->check(CLI::Range(std::uint64_t{1}, gen::max_flows))
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
    cmd->add_option("--rate", config->rate, "Mean packets per second of packet time (Poisson)")
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
        ->check(CLI::Range(std::uint32_t{1}, gen::max_snaplen))
        ->capture_default_str();
    cmd->add_option("--start", config->start, "UNIX time of the first packet (seconds)")
        ->check(unsigned_integer())
        ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{0xffffffff}))
        ->capture_default_str();
    cmd->add_option("--seed", config->seed, "Random seed (same seed, same bytes)")
        ->check(unsigned_integer())
        ->capture_default_str();

    cmd->callback([config, sizes_text, &runner] {
        config->sizes = gen::parse_size_mix(*sizes_text);  // validated above
        if (config->truth_path.empty()) config->truth_path = config->out_path + ".truth.tsv";
        if (config->truth_path == config->out_path) {
            throw CLI::ValidationError("--truth", "must name a different file than --out");
        }
        runner = [config] { return run_gen(*config); };
    });
}

}  // namespace flowsketch::app
