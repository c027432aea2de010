#include "src/verify_options.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "src/cli/range.hpp"
#include "src/commands.hpp"

namespace flowsketch::app {

void add_verify_options(CLI::App& app, VerifyOptions& options) {
    // A flag that takes `=strict`: `--verify tcp` leaves `tcp` to the filter.
    CLI::Option* verify = app.add_flag(
        "--verify{on}", options.mode,
        "Also count every key exactly and check each report's lists and flow counts against the "
        "exact counts (a verify section); --verify=strict also exits 3 when bounds break more "
        "often than delta allows");
    // The help shows [=strict]; a described check would add ":{on,strict}".
    verify->check(CLI::Validator(
                      [](const std::string& value) {
                          return value == "on" || value == "strict" ? std::string()
                                                                    : "--verify takes no value but =strict, not '" +
                                                                          value + "'";
                      },
                      ""))
        ->type_name("[=strict]");
    app.add_option("--verify-max-flows", options.max_flows,
                   "With --verify: stop with an error when an exact table (a key spec's keys in a window, "
                   "distinct pairs, lifecycle flows) would pass N entries")
        ->type_name("N")
        ->check(cli::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
        ->capture_default_str()
        ->needs(verify);
}

int verify_exit_status(const VerifyOptions& options, const core::VerifyVerdict& verdict, int status) {
    if (status != exit_ok || !options.strict() || !verdict.broken()) return status;
    std::fflush(stdout);
    fmt::print(stderr,
               "flowsketch: --verify=strict: bounds broke more often than delta allows: over {} reports, {} of {} "
               "listed rows below their lower bound ({} allowed), {} of {} flow counts out of bound ({} allowed); "
               "{} report(s) broken on their own\n",
               verdict.reports, verdict.rows.breaks, verdict.rows.checks, verdict.rows.allowed,
               verdict.flow_bounds.breaks, verdict.flow_bounds.checks, verdict.flow_bounds.allowed,
               verdict.broken_reports);
    return exit_bounds_broken;
}

}  // namespace flowsketch::app
