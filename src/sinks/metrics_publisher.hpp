// The Prometheus sink: each completed report is folded into the exposition
// and the rendered scrape body handed to the metrics server.
#pragma once

#include "reports/prometheus.hpp"
#include "reports/report_writer.hpp"
#include "src/sinks/metrics_server.hpp"

namespace flowsketch::app {

class MetricsPublisher final : public reports::ReportWriter {
public:
    MetricsPublisher(MetricsServer& server, reports::PrometheusExposition& exposition)
        : server_(server), exposition_(exposition) {}
    void write(const reports::Report& report) override {
        exposition_.observe(report);
        server_.publish(exposition_.render());
    }

private:
    MetricsServer& server_;
    reports::PrometheusExposition& exposition_;
};

}  // namespace flowsketch::app
