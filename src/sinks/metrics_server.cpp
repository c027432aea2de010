// HTTP/1.1 with Boost.Beast on one io_context thread. Memory per connection
// is bounded (a fixed-size read buffer, a parser with header and body limits,
// a response that points at the shared exposition instead of copying it), and
// so is the number of connections; a deadline closes clients that stall.
#include "src/sinks/metrics_server.hpp"

#include <fmt/format.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/span.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "reports/prometheus.hpp"

namespace flowsketch::app {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using ErrorCode = boost::system::error_code;

constexpr std::string_view index_page =
    "<html><head><title>flowsketch</title></head><body>"
    "<h1>flowsketch</h1><p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

// After an accept fails for a reason other than shutdown (out of file
// descriptors, say), wait before the next accept instead of spinning the loop.
constexpr auto accept_retry_delay = std::chrono::milliseconds(50);

class Connection;

bool is_parse_error(const ErrorCode& ec) {
    return ec.category() == http::make_error_code(http::error::end_of_stream).category();
}

std::string endpoint_text(const tcp::endpoint& endpoint) {
    const net::ip::address address = endpoint.address();
    return address.is_v6() ? fmt::format("[{}]:{}", address.to_string(), endpoint.port())
                           : fmt::format("{}:{}", address.to_string(), endpoint.port());
}

}  // namespace

struct MetricsServer::State {
    State(net::io_context& io_context, const MetricsServerLimits& server_limits)
        : io(io_context), limits(server_limits), acceptor(io_context), accept_retry(io_context) {}

    std::shared_ptr<const std::string> body() {
        const std::lock_guard lock(body_mutex);
        return body_;
    }
    void set_body(std::shared_ptr<const std::string> body) {
        const std::lock_guard lock(body_mutex);
        body_ = std::move(body);
    }

    net::io_context& io;
    MetricsServerLimits limits;
    tcp::acceptor acceptor;
    net::steady_timer accept_retry;
    bool stopped = false;
    std::unordered_set<Connection*> live;  // to close them all on shutdown
    std::size_t peak = 0;
    std::uint64_t rejected = 0;
    std::uint64_t timed_out = 0;

private:
    std::mutex body_mutex;  // publish() may run on another thread
    std::shared_ptr<const std::string> body_ = std::make_shared<const std::string>();
};

namespace {

using State = MetricsServer::State;

// One client connection: read a request, write the response, repeat while
// the client keeps the connection alive. Owned by its pending handlers.
class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(std::shared_ptr<State> state, tcp::socket socket)
        : state_(std::move(state)),
          socket_(std::move(socket)),
          deadline_(state_->io),
          // Room for a whole request at the limits; the parser rejects more.
          buffer_(static_cast<std::size_t>(state_->limits.max_header_bytes +
                                           state_->limits.max_body_bytes) +
                  1024) {
        state_->live.insert(this);
        state_->peak = std::max(state_->peak, state_->live.size());
    }
    ~Connection() { state_->live.erase(this); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    void start() { read_request(); }

    void close() {
        if (closed_) return;
        closed_ = true;
        ErrorCode ignored;
        socket_.close(ignored);  // pending operations complete with operation_aborted
        deadline_.cancel();
    }

private:
    using Response = http::response<http::span_body<const char>>;

    // The deadline covers one exchange: the whole request, then the response.
    void arm_deadline() {
        deadline_.expires_after(state_->limits.request_deadline);
        deadline_.async_wait([self = shared_from_this()](ErrorCode ec) { self->on_deadline(ec); });
    }

    void on_deadline(ErrorCode ec) {
        if (ec == net::error::operation_aborted || closed_) return;
        // Re-armed after this wait had already completed: the newer wait rules.
        if (deadline_.expiry() > net::steady_timer::clock_type::now()) return;
        ++state_->timed_out;
        close();
    }

    void read_request() {
        arm_deadline();
        parser_.emplace();
        parser_->header_limit(state_->limits.max_header_bytes);
        parser_->body_limit(state_->limits.max_body_bytes);
        http::async_read(
            socket_, buffer_, *parser_,
            [self = shared_from_this()](ErrorCode ec, std::size_t) { self->on_read(ec); });
    }

    void on_read(ErrorCode ec) {
        if (closed_) return;
        if (ec == http::error::end_of_stream) {  // the client is done: a clean close
            ErrorCode ignored;
            socket_.shutdown(tcp::socket::shutdown_send, ignored);
            close();
            return;
        }
        if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
            respond_error(http::status::request_header_fields_too_large);
            return;
        }
        if (ec == http::error::body_limit) {
            respond_error(http::status::payload_too_large);
            return;
        }
        if (ec && is_parse_error(ec)) {
            respond_error(http::status::bad_request);
            return;
        }
        if (ec) {  // reset by the peer, or closed by the deadline
            close();
            return;
        }
        route(parser_->get());
    }

    void route(const http::request<http::string_body>& request) {
        const std::string_view target(request.target().data(), request.target().size());
        const std::string_view path = target.substr(0, target.find('?'));
        const bool get_or_head =
            request.method() == http::verb::get || request.method() == http::verb::head;
        const bool keep_alive = request.keep_alive() && !state_->stopped;

        if (path != "/metrics" && path != "/") {
            respond_text(http::status::not_found, "not found; metrics are at /metrics\n",
                         keep_alive, request.version());
            return;
        }
        if (!get_or_head) {
            respond_text(http::status::method_not_allowed, "only GET and HEAD\n", keep_alive,
                         request.version());
            return;
        }
        Response response{http::status::ok, request.version()};
        if (path == "/metrics") {
            body_ = state_->body();
            response.set(http::field::content_type,
                         beast::string_view(reports::exposition_content_type.data(),
                                            reports::exposition_content_type.size()));
        } else {
            body_.reset();
            response.set(http::field::content_type, "text/html; charset=utf-8");
        }
        const std::string_view content = body_ ? std::string_view(*body_) : index_page;
        if (request.method() == http::verb::head) {
            response.content_length(content.size());
        } else {
            response.body() = beast::span<const char>(content.data(), content.size());
            response.prepare_payload();
        }
        send(std::move(response), keep_alive);
    }

    void respond_text(http::status status, std::string_view text, bool keep_alive,
                      unsigned version) {
        body_ = std::make_shared<const std::string>(text);
        Response response{status, version};
        response.set(http::field::content_type, "text/plain; charset=utf-8");
        if (status == http::status::method_not_allowed)
            response.set(http::field::allow, "GET, HEAD");
        response.body() = beast::span<const char>(body_->data(), body_->size());
        response.prepare_payload();
        send(std::move(response), keep_alive);
    }

    // The request could not be read: answer, then close (the stream position
    // of the next request is unknown).
    void respond_error(http::status status) {
        const beast::string_view reason = http::obsolete_reason(status);
        respond_text(status, fmt::format("{}\n", std::string_view(reason.data(), reason.size())),
                     false, 11);
    }

    void send(Response response, bool keep_alive) {
        response.set(http::field::server, "flowsketch");
        response.keep_alive(keep_alive);
        response_.emplace(std::move(response));
        http::async_write(socket_, *response_,
                          [self = shared_from_this(), keep_alive](ErrorCode ec, std::size_t) {
                              self->on_write(ec, keep_alive);
                          });
    }

    void on_write(ErrorCode ec, bool keep_alive) {
        if (closed_) return;
        response_.reset();
        body_.reset();  // the next publish() need not wait for this connection
        if (ec) {
            close();
            return;
        }
        if (keep_alive && !state_->stopped) {
            read_request();
            return;
        }
        // Half-close, then read until the client closes (bounded by the
        // deadline): closing with unread input would reset the connection and
        // could destroy the response before the client reads it.
        ErrorCode ignored;
        socket_.shutdown(tcp::socket::shutdown_send, ignored);
        drain();
    }

    void drain() {
        socket_.async_read_some(net::buffer(scratch_),
                                [self = shared_from_this()](ErrorCode ec, std::size_t) {
                                    if (self->closed_) return;
                                    if (ec) {
                                        self->close();
                                        return;
                                    }
                                    self->drain();
                                });
    }

    std::shared_ptr<State> state_;
    tcp::socket socket_;
    net::steady_timer deadline_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    std::optional<Response> response_;
    std::shared_ptr<const std::string> body_;  // what response_ points into
    std::array<char, 512> scratch_{};
    bool closed_ = false;
};

void start_accept(const std::shared_ptr<State>& state);

void on_accept(const std::shared_ptr<State>& state, ErrorCode ec, tcp::socket socket) {
    if (state->stopped) return;
    if (ec == net::error::operation_aborted) return;
    if (ec) {
        state->accept_retry.expires_after(accept_retry_delay);
        state->accept_retry.async_wait([state](ErrorCode wait_ec) {
            if (wait_ec || state->stopped) return;
            start_accept(state);
        });
        return;
    }
    if (state->live.size() >= state->limits.max_connections) {
        ++state->rejected;
        ErrorCode ignored;
        socket.close(ignored);
    } else {
        std::make_shared<Connection>(state, std::move(socket))->start();
    }
    start_accept(state);
}

void start_accept(const std::shared_ptr<State>& state) {
    state->acceptor.async_accept(state->io, [state](ErrorCode ec, tcp::socket socket) {
        on_accept(state, ec, std::move(socket));
    });
}

std::uint16_t parse_port(std::string_view text, std::string_view whole) {
    unsigned value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, err] = std::from_chars(text.data(), end, value);
    if (text.empty() || err != std::errc{} || ptr != end || value > 65535) {
        throw std::invalid_argument(
            fmt::format("listen address '{}': port must be a number from 0 to 65535", whole));
    }
    return static_cast<std::uint16_t>(value);
}

}  // namespace

ListenAddress ListenAddress::parse(std::string_view text) {
    ListenAddress result;
    std::string_view host;
    std::string_view port;
    if (!text.empty() && text.front() == '[') {
        const std::size_t close = text.find("]:");
        if (close == std::string_view::npos) {
            throw std::invalid_argument(
                fmt::format("listen address '{}': expected [IPV6]:PORT", text));
        }
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        const std::size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) {
            throw std::invalid_argument(
                fmt::format("listen address '{}': expected ADDR:PORT, [IPV6]:PORT or :PORT", text));
        }
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.find(':') != std::string_view::npos) {
            throw std::invalid_argument(fmt::format(
                "listen address '{}': put an IPv6 address in brackets, as [::1]:9464", text));
        }
    }
    result.port = parse_port(port, text);
    if (host.empty() || host == "localhost") {
        result.host = "127.0.0.1";  // loopback unless asked otherwise: metrics are not public
        return result;
    }
    ErrorCode ec;
    const net::ip::address address = net::ip::make_address(std::string(host), ec);
    if (ec) {
        throw std::invalid_argument(
            fmt::format("listen address '{}': '{}' is not a numeric IP address", text, host));
    }
    result.host = address.to_string();
    return result;
}

MetricsServer::MetricsServer(net::io_context& io, std::string_view listen,
                             MetricsServerLimits limits)
    : state_(std::make_shared<State>(io, limits)) {
    if (limits.max_connections == 0) {
        throw std::invalid_argument("metrics server: max_connections must be at least 1");
    }
    const ListenAddress where = ListenAddress::parse(listen);
    const tcp::endpoint endpoint(net::ip::make_address(where.host), where.port);
    tcp::acceptor& acceptor = state_->acceptor;
    ErrorCode ec;
    auto fail = [&](std::string_view what) {
        throw std::runtime_error(fmt::format("cannot listen on {} for metrics: {}: {}",
                                             endpoint_text(endpoint), what, ec.message()));
    };
    if (acceptor.open(endpoint.protocol(), ec)) fail("open");
    // Lets a restarted flowsketch bind while old connections sit in TIME_WAIT;
    // on Linux it still refuses a port another socket listens on.
    if (acceptor.set_option(net::socket_base::reuse_address(true), ec)) fail("SO_REUSEADDR");
    if (acceptor.bind(endpoint, ec)) fail("bind");
    if (acceptor.listen(net::socket_base::max_listen_connections, ec)) fail("listen");
    start_accept(state_);
}

MetricsServer::~MetricsServer() {
    State& state = *state_;
    state.stopped = true;
    ErrorCode ignored;
    state.acceptor.close(ignored);
    state.accept_retry.cancel();
    // Copy first: closing does not destroy a connection (its handlers hold
    // it), but stay safe against the set changing underneath.
    const std::vector<Connection*> open(state.live.begin(), state.live.end());
    for (Connection* connection : open) connection->close();
}

void MetricsServer::publish(std::string exposition) {
    state_->set_body(std::make_shared<const std::string>(std::move(exposition)));
}

std::uint16_t MetricsServer::port() const noexcept {
    ErrorCode ec;
    const tcp::endpoint endpoint = state_->acceptor.local_endpoint(ec);
    return ec ? 0 : endpoint.port();
}

std::string MetricsServer::address() const {
    ErrorCode ec;
    const tcp::endpoint endpoint = state_->acceptor.local_endpoint(ec);
    return ec ? std::string() : endpoint_text(endpoint);
}

std::size_t MetricsServer::connections() const noexcept { return state_->live.size(); }
std::size_t MetricsServer::peak_connections() const noexcept { return state_->peak; }
std::uint64_t MetricsServer::rejected_connections() const noexcept { return state_->rejected; }
std::uint64_t MetricsServer::timed_out_connections() const noexcept { return state_->timed_out; }

}  // namespace flowsketch::app
