// Test program for the Prometheus end-to-end test: replays one capture
// through the pipeline into a PrometheusExposition, then serves it with
// MetricsServer until SIGTERM/SIGINT.
//
//   metrics_fixture PCAP [--interval SECONDS] [--listen ADDR:PORT]
//
// Prints "listening on ADDR:PORT" on stdout once the whole capture is
// published (the default port 0 lets the system choose, so parallel test
// runs never collide). Exit 0 after a signal; 1 on any error.
#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "reports/prometheus.hpp"
#include "src/metrics_server.hpp"
#include "src/pipeline.hpp"

namespace {

using namespace flowsketch;

// Each completed report goes into the exposition, and the new rendering is
// published at once, as the live runner will do.
class ExpositionWriter final : public reports::ReportWriter {
public:
    ExpositionWriter(reports::PrometheusExposition& exposition, app::MetricsServer& server)
        : exposition_(exposition), server_(server) {}
    void write(const reports::Report& report) override {
        exposition_.observe(report);
        server_.publish(exposition_.render());
    }

private:
    reports::PrometheusExposition& exposition_;
    app::MetricsServer& server_;
};

int run(int argc, char** argv) {
    if (argc < 2) {
        throw std::invalid_argument("usage: metrics_fixture PCAP [--interval S] [--listen A]");
    }
    const std::string path = argv[1];
    double interval = 0;
    std::string listen = "127.0.0.1:0";
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--interval") {
            interval = std::stod(argv[i + 1]);
        } else if (flag == "--listen") {
            listen = argv[i + 1];
        } else {
            throw std::invalid_argument("unknown option " + flag);
        }
    }

    boost::asio::io_context io;
    auto server = std::make_unique<app::MetricsServer>(io, listen);
    reports::PrometheusExposition exposition;
    ExpositionWriter writer(exposition, *server);

    app::PipelineConfig config;
    config.interval_seconds = interval;
    config.measurement.sketch =
        core::CountMinParams::for_error(0.001, 0.001, core::CountMinVariant::kirsch_mitzenmacher);
    app::Pipeline pipeline(config, writer);
    capture::PcapFileSource source(path, "");
    capture::Frame frame;
    for (;;) {
        const capture::ReadStatus status = source.next(frame);
        if (status == capture::ReadStatus::frame) {
            pipeline.on_frame(frame, source.link_type());
            continue;
        }
        if (status == capture::ReadStatus::damaged) pipeline.note_damage(source.damage_message());
        break;
    }
    pipeline.finish();

    boost::asio::signal_set signals(io, SIGTERM, SIGINT);
    signals.async_wait([&](const boost::system::error_code& ec, int) {
        if (ec) return;
        server.reset();  // closes the listener and every connection
        io.stop();
    });
    fmt::print("listening on {}\n", server->address());
    std::fflush(stdout);
    io.run();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        fmt::print(stderr, "metrics_fixture: {}\n", e.what());
        return 1;
    }
}
