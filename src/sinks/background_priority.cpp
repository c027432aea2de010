#include "src/sinks/background_priority.hpp"

#include <sys/resource.h>
#include <unistd.h>

namespace flowsketch::app {

void lower_this_thread_priority() noexcept {
    // On Linux a nice value belongs to a thread: PRIO_PROCESS with a thread id sets that thread's alone.
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
}

}  // namespace flowsketch::app
