// Documents generated from the command line's own definitions, so they can
// never disagree with --help: the flowsketch(1) man page and bash completion.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace flowsketch::cli {

/// The man page (roff, man(7) macros) of `app` and its subcommands.
std::string man_page(const CLI::App& app, const std::string& version);

/// A bash completion script for `app`: options per subcommand, subcommand
/// names, and file names where an option takes a FILE.
std::string bash_completion(const CLI::App& app);

}  // namespace flowsketch::cli
