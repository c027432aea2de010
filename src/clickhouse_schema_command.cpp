// `flowsketch clickhouse-schema`: the CREATE statements of the tables
// --clickhouse exports to, printed, or run against a server.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "src/clickhouse_options.hpp"
#include "src/clickhouse_schema.hpp"
#include "src/commands.hpp"

namespace flowsketch::app {
namespace {

int run_schema(const ClickHouseOptions& options) {
    const auto fail = [](int code, const std::string& message) {
        std::fflush(stdout);
        fmt::print(stderr, "flowsketch: clickhouse-schema: {}\n", message);
        return code;
    };
    ClickHouseOptions checked = options;
    if (checked.url.empty()) checked.url = "http://127.0.0.1:8123";  // only the names are checked
    ClickHouseEndpoint endpoint;
    try {
        endpoint = clickhouse_endpoint(checked);
    } catch (const std::invalid_argument& e) {
        return fail(exit_usage_error, e.what());
    } catch (const std::runtime_error& e) {
        return fail(exit_runtime_error, e.what());
    }
    const std::vector<std::string> statements = clickhouse_schema(endpoint.database, endpoint.table_prefix);
    if (options.url.empty()) {
        for (const std::string& statement : statements) fmt::print("{};\n\n", statement);
        return exit_ok;
    }
    ClickHouseClient client(endpoint, std::chrono::milliseconds(std::llround(options.timeout * 1000)));
    try {
        for (const std::string& statement : statements) client.execute(statement, {}, false);
    } catch (const ClickHouseError& e) {
        return fail(exit_runtime_error, e.what());
    }
    return exit_ok;
}

}  // namespace

void setup_clickhouse_schema_command(CLI::App& app, CommandRunner& runner) {
    auto options = std::make_shared<ClickHouseOptions>();
    CLI::App* schema = app.add_subcommand(
        "clickhouse-schema", "Print the ClickHouse tables' CREATE statements (with --clickhouse: create them)");
    add_clickhouse_options(*schema, *options, false, false);
    schema->callback([options, &runner] { runner = [options] { return run_schema(*options); }; });
}

}  // namespace flowsketch::app
