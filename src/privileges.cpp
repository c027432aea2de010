#include "src/privileges.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace flowsketch::app {

void drop_privileges(const std::string& user) {
    errno = 0;
    const passwd* entry = ::getpwnam(user.c_str());
    if (entry == nullptr) throw std::runtime_error("-Z " + user + ": no such user");
    const auto fail = [&](const char* step) {
        throw std::runtime_error("-Z " + user + ": " + step + ": " + std::strerror(errno));
    };
    // Order matters: groups first, while we still may change them; uid last.
    if (::initgroups(entry->pw_name, entry->pw_gid) != 0) fail("initgroups");
    if (::setgid(entry->pw_gid) != 0) fail("setgid");
    if (::setuid(entry->pw_uid) != 0) fail("setuid");
    // Regaining root must now be impossible.
    if (entry->pw_uid != 0 && ::setuid(0) == 0) {
        throw std::runtime_error("-Z " + user + ": privileges could be regained after dropping");
    }
}

}  // namespace flowsketch::app
