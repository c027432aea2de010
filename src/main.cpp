// flowsketch: heavy hitters and flow counts with error bounds, in fixed memory.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "src/cli/generate.hpp"
#include "src/commands.hpp"

int main(int argc, char** argv) {
    using namespace flowsketch::app;
    CLI::App app{
        "flowsketch: who is eating the link, in fixed memory, with error bounds.\n"
        "Replays pcap/pcapng files (-r) and reports heavy hitters by packets and bytes.",
        "flowsketch"};
    const std::string version = "flowsketch 0.1.0";
    app.set_version_flag("--version", version);
    std::string generate;
    app.add_option("--generate", generate,
                   "Print the man page (man) or the bash completion script (complete-bash), "
                   "made from these option definitions, and exit")
        ->type_name("KIND")
        ->check(CLI::IsMember({"man", "complete-bash"}));
    CommandRunner runner;
    // Commands: measurement is the default; gen and lab are subcommands.
    setup_measure_command(app, runner);
    setup_gen_command(app, runner);
    setup_lab_command(app, runner);
    setup_merge_command(app, runner);
    setup_query_command(app, runner);
    setup_clickhouse_schema_command(app, runner);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // One line naming the option, and the usage-error exit code (as tcpdump).
        fmt::print(stderr, "flowsketch: {} (see flowsketch --help)\n", e.what());
        return exit_usage_error;
    }
    if (!generate.empty()) {
        const std::string text = generate == "man" ? flowsketch::cli::man_page(app, version)
                                                   : flowsketch::cli::bash_completion(app);
        std::fputs(text.c_str(), stdout);
        return std::fflush(stdout) == 0 ? exit_ok : exit_runtime_error;
    }
    if (!runner) {
        fmt::print(stderr, "flowsketch: nothing to do (see flowsketch --help)\n");
        return exit_usage_error;
    }
    return runner();
}
