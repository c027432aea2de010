#include "reports/report.hpp"

#include <string>

namespace flowsketch::reports {

const char* kind_name(ReportKind kind) noexcept {
    return kind == ReportKind::interval ? "interval" : "final";
}

}  // namespace flowsketch::reports
