// A synchronous client of ClickHouse's HTTP interface (Boost.Beast): what the
// exporter's own thread and the query and schema commands send. It keeps its
// connection open from statement to statement (HTTP keep-alive), so a batch's
// inserts do not each pay a name lookup and a TCP handshake. Credentials travel
// in the X-ClickHouse-User and X-ClickHouse-Key headers, never in the URL, so
// no log line holds them.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace flowsketch::app {

/// Where ClickHouse listens, and as whom to connect.
struct ClickHouseEndpoint {
    std::string host;
    std::string port = "8123";
    std::string database = "flowsketch";
    std::string table_prefix;
    std::string user;      // empty: the server's default user
    std::string password;
};

/// Parses `http://HOST[:PORT][/]`; throws std::invalid_argument naming what is
/// wrong (another scheme, no host, a port outside 1..65535, a path, user info).
ClickHouseEndpoint parse_clickhouse_url(std::string_view url);

/// A statement ClickHouse refused (the status and its message), or one that
/// never reached it (the message says which).
class ClickHouseError : public std::runtime_error {
public:
    ClickHouseError(const std::string& message, bool refused_by_server)
        : std::runtime_error(message), refused_by_server_(refused_by_server) {}
    /// true: the server answered with an error (retrying the same statement
    /// will not help); false: connection, timeout or transport failure.
    bool refused_by_server() const noexcept { return refused_by_server_; }

private:
    bool refused_by_server_;
};

/// One thread at a time: a client holds one connection.
class ClickHouseClient {
public:
    ClickHouseClient(ClickHouseEndpoint endpoint, std::chrono::milliseconds timeout);
    ~ClickHouseClient();
    ClickHouseClient(ClickHouseClient&&) noexcept;
    ClickHouseClient& operator=(ClickHouseClient&&) noexcept;

    const ClickHouseEndpoint& endpoint() const noexcept { return endpoint_; }

    /// Runs `query` (with `body` after it as the data of an INSERT, when not
    /// empty) in the endpoint's database, or in none when `in_database` is
    /// false (CREATE DATABASE). Returns the response body; throws
    /// ClickHouseError. The connection is kept for the next statement unless
    /// it then has been idle for 2 s; a kept one the server has closed
    /// meanwhile (a restart) is replaced once, when it failed before any
    /// answer; any other failure is thrown.
    std::string execute(std::string_view query, std::string_view body = {}, bool in_database = true);

    /// A table's full name: `database`.`prefix + name`.
    std::string table(std::string_view name) const;

private:
    struct Connection;  // keeps Asio out of this header

    ClickHouseEndpoint endpoint_;
    std::chrono::milliseconds timeout_;
    std::unique_ptr<Connection> connection_;
};

/// `text` as a ClickHouse string literal ('…' with \\ and \' escaped).
std::string quote_literal(std::string_view text);

}  // namespace flowsketch::app
