// --verify and --verify-max-flows, shared by the measurement command and
// `merge` (docs/verify.md): their definitions, and what they do to the exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "core/verify/verification.hpp"

namespace flowsketch::app {

struct VerifyOptions {
    std::string mode;  // "" off, "on", "strict"
    std::uint64_t max_flows = 10'000'000;

    bool on() const noexcept { return !mode.empty(); }
    bool strict() const noexcept { return mode == "strict"; }
};

/// Registers --verify[=strict] and --verify-max-flows on `app`.
void add_verify_options(CLI::App& app, VerifyOptions& options);

/// The exit code of a run that ended with `status`: under --verify=strict, a
/// successful run whose reports broke their bounds more often than δ allows
/// (`verdict`) exits exit_bounds_broken, saying so in one line.
int verify_exit_status(const VerifyOptions& options, const core::VerifyVerdict& verdict, int status);

}  // namespace flowsketch::app
