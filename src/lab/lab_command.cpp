// `flowsketch lab`: reproduce the seed papers' experiments. Each sub-command
// prints its tables (text or JSON Lines) and exits 0 if every row is within
// tolerance, 1 otherwise (or on a runtime error, with one line on stderr).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/cli/range.hpp"
#include "src/commands.hpp"
#include "src/lab/experiments.hpp"
#include "src/lab/lab_html.hpp"

namespace flowsketch::app {
namespace {

using lab::Table;
using Experiment = std::vector<Table> (*)(const lab::LabOptions&);

struct LabCommandOptions {
    lab::LabOptions lab;
    std::string format = "text";
    std::string html;  // the page's path, or "" for none
};

// Written beside its place and renamed over it: a reader sees the old page or the new one.
void write_page(const std::string& path, const std::string& page) {
    const std::string temporary = path + ".tmp";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out << page;
        out.flush();
        if (!out) throw std::runtime_error("--html: cannot write " + temporary);
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::filesystem::remove(temporary, error);
        throw std::runtime_error("--html: cannot write " + path);
    }
}

int run_lab(const std::string& name, const LabCommandOptions& options, const std::vector<Experiment>& experiments) {
    lab::LabOptions lab_options = options.lab;
    lab_options.format = options.format == "json" ? lab::Format::json : lab::Format::text;
    bool all_within = true;
    std::size_t outside = 0;
    std::vector<Table> tables;
    try {
        for (const Experiment experiment : experiments) {
            for (Table& table : experiment(lab_options)) {
                lab::print_table(table, lab_options.format);
                for (const auto& row : table.rows) {
                    if (!row.within()) {
                        all_within = false;
                        ++outside;
                    }
                }
                std::fflush(stdout);
                if (!options.html.empty()) tables.push_back(std::move(table));
            }
        }
        if (!options.html.empty()) {
            std::string command = "flowsketch lab " + name;
            if (options.lab.trials != 0) command += " --trials " + std::to_string(options.lab.trials);
            if (options.lab.paper_trials) command += " --paper-trials";
            command += " --seed " + std::to_string(options.lab.seed);
            write_page(options.html, lab::lab_page(tables, command));
        }
    } catch (const std::exception& e) {
        fmt::print(stderr, "flowsketch lab: error: {}\n", e.what());
        return exit_runtime_error;
    }
    if (!all_within) {
        fmt::print(stderr, "flowsketch lab: {} row(s) outside tolerance\n", outside);
        return exit_runtime_error;
    }
    return exit_ok;
}

void add_common_options(CLI::App* cmd, LabCommandOptions& options) {
    cmd->add_option("--trials", options.lab.trials,
                    "Trials per configuration (default: each experiment's own, about a minute "
                    "in all on 2 cores; the papers used 1000-10000)")
        ->check(cli::Range(std::uint64_t{2}, std::uint64_t{10'000'000}));
    cmd->add_flag("--paper-trials", options.lab.paper_trials,
                  "As many trials as the paper ran where the default runs fewer (two-choice: "
                  "1000 instead of 40; tens of minutes on 2 cores)")
        ->excludes("--trials");
    cmd->add_option("--seed", options.lab.seed, "Seed (same seed, same tables)")
        ->capture_default_str();
    cmd->add_option("--format", options.format, "Output: text tables or json (one row per line)")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->add_option("--threads", options.lab.threads,
                    "Worker threads for trials (results do not depend on it)")
        ->check(cli::Range(1u, 256u))
        ->capture_default_str();
    cmd->add_option("--html", options.html,
                    "Also write the tables and the papers' figures to FILE as one self-contained HTML page")
        ->type_name("FILE");
}

}  // namespace

void setup_lab_command(CLI::App& app, CommandRunner& runner) {
    CLI::App* lab_cmd = app.add_subcommand(
        "lab", "Reproduce the sketch papers' experiments (exit 1 if a row is out of tolerance)");
    lab_cmd->require_subcommand(1);

    struct Entry {
        const char* name;
        const char* help;
        std::vector<Experiment> experiments;
    };
    const std::vector<Entry> entries = {
        {"bloom", "Kirsch-Mitzenmacher s8: Bloom false-positive rate by hashing scheme",
         {&lab::bloom_experiment}},
        {"two-choice", "Lumetta-Mitzenmacher Tables 1-3: Bloom filters with two or three choices",
         {&lab::two_choice_experiment}},
        {"cms", "Count-Min, standard vs Kirsch-Mitzenmacher rows, on a Zipf stream",
         {&lab::count_min_experiment}},
        {"counting", "Counting Bloom filter: largest counter vs the overflow bound",
         {&lab::counting_experiment}},
        {"all", "Every experiment above, in turn",
         {&lab::bloom_experiment, &lab::two_choice_experiment, &lab::count_min_experiment,
          &lab::counting_experiment}},
    };
    for (const Entry& entry : entries) {
        auto options = std::make_shared<LabCommandOptions>();
        CLI::App* cmd = lab_cmd->add_subcommand(entry.name, entry.help);
        add_common_options(cmd, *options);
        cmd->callback([options, name = std::string(entry.name), experiments = entry.experiments, &runner] {
            runner = [options, name, experiments] { return run_lab(name, *options, experiments); };
        });
    }
}

}  // namespace flowsketch::app
