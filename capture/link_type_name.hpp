// The name libpcap gives a link type (EN10MB, LINUX_SLL, ...), for reports
// and messages.
#pragma once

#include <string>

namespace flowsketch::capture {

/// libpcap's name of a DLT_* value, or "DLT_<n>" when it has none.
std::string link_type_name(int link_type);

}  // namespace flowsketch::capture
