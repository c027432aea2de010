#include "src/sinks/clickhouse_http.hpp"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <charconv>
#include <utility>

namespace flowsketch::app {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

bool valid_host(std::string_view host) {
    if (host.empty() || host.size() > 253) return false;
    if (host.front() == '[') return host.size() > 2 && host.back() == ']';  // an IPv6 literal
    for (const char c : host) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') return false;
    }
    return true;
}

std::string url_encode(std::string_view text) {
    std::string out;
    out.reserve(text.size() * 3);
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (std::isalnum(byte) || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(c);
        } else {
            out += fmt::format("%{:02X}", byte);
        }
    }
    return out;
}

// The first line of a ClickHouse error (it may carry a stack trace after it).
std::string first_line(std::string_view text) {
    const std::size_t end = text.find('\n');
    std::string line(text.substr(0, end));
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    return line;
}

}  // namespace

ClickHouseEndpoint parse_clickhouse_url(std::string_view url) {
    constexpr std::string_view scheme = "http://";
    if (url.substr(0, scheme.size()) != scheme) {
        const std::size_t colon = url.find("://");
        if (colon == std::string_view::npos) {
            throw std::invalid_argument(fmt::format("--clickhouse '{}': not a URL; give http://HOST:PORT", url));
        }
        throw std::invalid_argument(fmt::format("--clickhouse '{}': scheme '{}' is not supported; give http://HOST:PORT",
                                                url, url.substr(0, colon)));
    }
    std::string_view rest = url.substr(scheme.size());
    if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
        if (rest.substr(slash) != "/") {
            throw std::invalid_argument(fmt::format(
                "--clickhouse '{}': a path is not supported; give the database with --clickhouse-database", url));
        }
        rest = rest.substr(0, slash);
    }
    if (rest.find('@') != std::string_view::npos) {
        throw std::invalid_argument(fmt::format(
            "--clickhouse: a user in the URL is not accepted (ps shows it); use FLOWSKETCH_CLICKHOUSE_USER and "
            "FLOWSKETCH_CLICKHOUSE_PASSWORD or --clickhouse-password-file"));
    }
    ClickHouseEndpoint endpoint;
    std::string_view host = rest;
    const std::size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos && (rest.front() != '[' || colon > rest.find(']'))) {
        host = rest.substr(0, colon);
        const std::string_view port = rest.substr(colon + 1);
        unsigned value = 0;
        const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (port.empty() || error != std::errc{} || end != port.data() + port.size() || value < 1 || value > 65535) {
            throw std::invalid_argument(fmt::format("--clickhouse '{}': port '{}' is not a number in 1..65535", url, port));
        }
        endpoint.port = std::string(port);
    }
    if (!valid_host(host)) throw std::invalid_argument(fmt::format("--clickhouse '{}': '{}' is no host name", url, host));
    if (host.front() == '[') host = host.substr(1, host.size() - 2);
    endpoint.host = std::string(host);
    return endpoint;
}

struct ClickHouseClient::Connection {
    boost::asio::io_context io;
    beast::tcp_stream stream{io};
    std::chrono::steady_clock::time_point last_answer{};

    bool open() const noexcept { return stream.socket().is_open(); }
    void close() noexcept {
        beast::error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream.close();
    }
};

namespace {

// A connection idle this long is not reused: ClickHouse as configured by its
// packages closes idle ones after 3 s (keep_alive_timeout), and a statement
// sent on one the server is closing fails and has to be sent again.
constexpr auto max_idle = std::chrono::seconds(2);

// How a connection the server closed while it was idle fails: the request
// cannot be written, or the answer ends before its first byte.
bool closed_by_peer(const boost::system::error_code& code) {
    namespace error = boost::asio::error;
    return code == http::error::end_of_stream || code == error::eof || code == error::connection_reset ||
           code == error::broken_pipe || code == error::connection_aborted;
}

}  // namespace

ClickHouseClient::ClickHouseClient(ClickHouseEndpoint endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout), connection_(std::make_unique<Connection>()) {}

ClickHouseClient::~ClickHouseClient() {
    if (connection_ && connection_->open()) connection_->close();
}

ClickHouseClient::ClickHouseClient(ClickHouseClient&&) noexcept = default;
ClickHouseClient& ClickHouseClient::operator=(ClickHouseClient&&) noexcept = default;

std::string ClickHouseClient::table(std::string_view name) const {
    return fmt::format("`{}`.`{}{}`", endpoint_.database, endpoint_.table_prefix, name);
}

std::string ClickHouseClient::execute(std::string_view query, std::string_view body, bool in_database) {
    const std::string where = fmt::format("ClickHouse at {}:{}", endpoint_.host, endpoint_.port);
    std::string target = "/?";
    if (in_database) target += "database=" + url_encode(endpoint_.database) + "&";
    // With data, the statement goes in the URL and the data is the body;
    // without, the statement is the body (no length limit).
    if (!body.empty()) target += "query=" + url_encode(query);
    // The body is sent from the caller's buffer: a batch of windows is megabytes.
    http::request<http::span_body<const char>> request(http::verb::post, target, 11);
    request.set(http::field::host, endpoint_.host);
    request.set(http::field::content_type, "text/plain; charset=utf-8");
    if (!endpoint_.user.empty()) request.set("X-ClickHouse-User", endpoint_.user);
    if (!endpoint_.password.empty()) request.set("X-ClickHouse-Key", endpoint_.password);
    const std::string_view payload = body.empty() ? query : body;
    request.body() = beast::span<const char>(payload.data(), payload.size());
    request.prepare_payload();

    Connection& connection = *connection_;
    if (connection.open() && std::chrono::steady_clock::now() - connection.last_answer >= max_idle) connection.close();
    http::response<http::string_body> response;
    for (;;) {
        const bool reused = connection.open();
        http::response_parser<http::string_body> parser;
        parser.body_limit(std::uint64_t{1} << 32);
        try {
            if (!reused) {
                tcp::resolver resolver(connection.io);
                connection.stream.expires_after(timeout_);
                connection.stream.connect(resolver.resolve(endpoint_.host, endpoint_.port));
            }
            connection.stream.expires_after(timeout_);
            http::write(connection.stream, request);
            beast::flat_buffer buffer;
            connection.stream.expires_after(timeout_);
            http::read(connection.stream, buffer, parser);
        } catch (const boost::system::system_error& e) {
            connection.close();
            // The server closed the kept connection before this request reached it:
            // it ran nothing, so a new connection may carry it.
            if (reused && !parser.got_some() && closed_by_peer(e.code())) continue;
            throw ClickHouseError(fmt::format("{}: {}", where, e.code().message()), false);
        }
        response = parser.release();
        connection.last_answer = std::chrono::steady_clock::now();
        // After an error the server may have left part of the body unread on the connection.
        if (!response.keep_alive() || response.result() != http::status::ok) connection.close();
        break;
    }
    if (response.result() != http::status::ok) {
        throw ClickHouseError(fmt::format("{}: HTTP {}: {}", where, response.result_int(), first_line(response.body())),
                              true);
    }
    return std::move(response.body());
}

std::string quote_literal(std::string_view text) {
    std::string out = "'";
    for (const char c : text) {
        if (c == '\\' || c == '\'') out.push_back('\\');
        out.push_back(c);
    }
    out.push_back('\'');
    return out;
}

}  // namespace flowsketch::app
