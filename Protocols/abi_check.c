/* Compiles every ABI header as pedantic C11 with -Wall -Wextra -Werror (see Package.swift), so a
 * header that stops being clean C breaks the build, and pins the layout facts plugins rely on. */
#include "hubhost/hubhost.h"

#include <stddef.h>

_Static_assert(offsetof(hh_library_t, abi_version) == 0, "abi_version must be the first member");
_Static_assert(sizeof(hh_version_t) == 12, "hh_version_t is three uint32_t");
_Static_assert(sizeof(hh_status_t) == 4, "hh_status_t is int32_t");

/* The ABI version this header set declares, for hosts and tools written in C. */
hh_version_t hh_abi_header_version(void) {
    hh_version_t v = HH_ABI_VERSION_INIT;
    return v;
}
