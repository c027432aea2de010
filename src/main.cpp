// flowsketch: heavy hitters and flow counts with error bounds, in fixed memory.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "src/commands.hpp"

int main(int argc, char** argv) {
    using namespace flowsketch::app;
    CLI::App app{
        "flowsketch: who is eating the link, in fixed memory, with error bounds.\n"
        "Replays pcap/pcapng files (-r) and reports heavy hitters by packets and bytes.",
        "flowsketch"};
    app.set_version_flag("--version", "flowsketch 0.1.0");
    CommandRunner runner;
    // Commands: measurement is the default; gen and lab are subcommands.
    setup_measure_command(app, runner);
    setup_gen_command(app, runner);
    setup_lab_command(app, runner);
    setup_merge_command(app, runner);
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
    if (!runner) {
        fmt::print(stderr, "flowsketch: nothing to do (see flowsketch --help)\n");
        return exit_usage_error;
    }
    return runner();
}
