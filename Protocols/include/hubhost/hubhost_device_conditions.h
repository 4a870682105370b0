/*
 * hubhost plugin ABI v1.1: the `device_conditions` kind (HH_KIND_DEVICE_CONDITIONS, added in 1.1).
 *
 * Tells the host what the device can afford right now: which network it is on and whether that
 * network is metered, the battery level and whether it is charging, and how many bytes are free
 * on the file system of a directory. The prefetch engine asks before it starts a download and
 * while downloads run, to decide whether its policy (wifi only, requires charging, battery not
 * low, storage not low) lets them go; each waiting item carries the reason.
 *
 * The host asks often (every few seconds while downloads are waiting or running), so an answer
 * should be cheap: read a few small files, call statvfs, or return values held in memory. The
 * host does not cache answers; a plugin that is slow to learn something caches it itself.
 *
 * Only an ABI 1.1 host knows this kind: a plugin exporting it sets its library's abi_version to
 * at least 1.1 (HH_ABI_VERSION_INIT does) and `abi: "1.1"` in plugin.yaml.
 */
#ifndef HUBHOST_DEVICE_CONDITIONS_H
#define HUBHOST_DEVICE_CONDITIONS_H

#include "hubhost_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The network the device would download over now. Any other value is refused by the host as an
 * invalid answer (a failure of the call, reported with the value). */
typedef int32_t hh_network_type_t;

#define HH_NETWORK_NONE     0 /* no usable network: nothing can be downloaded */
#define HH_NETWORK_WIFI     1 /* a wireless LAN (802.11) */
#define HH_NETWORK_CELLULAR 2 /* a mobile data link (WWAN: LTE, 5G, ...) */
#define HH_NETWORK_ETHERNET 3 /* a wired link; the prefetch policy treats it like wifi */

/* Whether the device is charging. Any other value is refused by the host as an invalid answer. */
typedef int32_t hh_charging_t;

#define HH_CHARGING_UNKNOWN 0 /* the plugin cannot tell (also the zero-filled default) */
#define HH_CHARGING_NO      1 /* on battery, or a full battery not being charged */
#define HH_CHARGING_YES     2 /* connected to power: charging, or full on mains */

/* The answer. The host zero-fills it before the call, so a plugin fills only what it knows; the
 * zero values mean: no network, not metered, no battery, charging unknown, free bytes unknown.
 * The struct holds no pointers: there is nothing to release. */
typedef struct hh_device_conditions {
    hh_network_type_t network; /* one of HH_NETWORK_* */
    bool metered;              /* the network is billed by volume (cellular, a tethered hotspot) */

    bool has_battery;       /* false: the device has no battery (a server, a desktop);
                                 * battery_level is then ignored */
    double battery_level;   /* 0.0 (empty) ... 1.0 (full), when has_battery. A value outside
                                 * 0...1, NaN or infinite is refused as an invalid answer. */
    hh_charging_t charging; /* one of HH_CHARGING_* */

    bool has_free_bytes; /* false: free space unknown; free_bytes is then ignored */
    uint64_t free_bytes; /* bytes available to an unprivileged writer on the file system
                                 * that holds `data_directory` (statvfs: f_bavail * f_frsize) */
} hh_device_conditions_t;

typedef struct hh_device_conditions_v1 {
    /* Fill *out with the conditions now.
     * `data_directory` is the absolute path (NUL-terminated, borrowed for the call) of the
     * directory the host will write downloads to; free_bytes is about its file system. It may not
     * exist yet: then answer has_free_bytes = false or measure its nearest existing parent.
     * `out` is host-owned, zero-filled, borrowed for the call.
     * HH_OK: *out is the answer; the host checks every field (see above) and treats a bad one as
     *   a failure of this call, naming the field and value.
     * HH_ERR_UNAVAILABLE: the plugin cannot tell now (e.g. its source file is missing); the
     *   host's caller decides what to assume (the prefetch engine waits, with that reason).
     * Any other status: a failure (report_error first); handled like HH_ERR_UNAVAILABLE.
     * Must not block for long: the host calls it from a worker thread, never an event loop, but
     * other downloads' decisions wait for the answer. [thread-safe] */
    hh_status_t (*read_conditions)(void *instance, const char *data_directory, hh_device_conditions_t *out);
} hh_device_conditions_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_DEVICE_CONDITIONS_H */
