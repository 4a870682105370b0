/*
 * linux-device-conditions: a device_conditions plugin for Linux, written in C. It reads
 *   - the network from /proc/net/route (the interface of the default route with the lowest
 *     metric) and /sys/class/net/<if>: wifi when <if>/wireless or <if>/phy80211 exists or
 *     <if>/uevent says DEVTYPE=wlan, cellular when it says DEVTYPE=wwan (or the interface is a
 *     point-to-point link, type 512), ethernet otherwise. Without a default route it picks the
 *     best interface that is up (ethernet, then wifi, then cellular); none when there is none;
 *   - the battery from /sys/class/power_supply: every supply of type Battery that is present and
 *     powers the system (scope not Device), level from capacity (percent) or energy_now /
 *     energy_full or charge_now / charge_full; charging from its status, else from a Mains or USB
 *     supply being online;
 *   - the free bytes with statvfs at the data directory, or its nearest existing parent.
 * Every path is configurable, so tests point it at a made-up tree. It keeps no state between
 * calls (each call reads afresh), so it is [thread-safe] without locks.
 */
#define _POSIX_C_SOURCE 200809L

#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define LDC_PATH_MAX 4096
/* Entries looked at in one directory (interfaces, power supplies): bounds every loop. */
#define LDC_MAX_ENTRIES 256
/* Lines read from the route table. */
#define LDC_MAX_ROUTES 1024
#define LDC_NAME_MAX   64

typedef struct linux_conditions {
    char power_supply[LDC_PATH_MAX];
    char net[LDC_PATH_MAX];
    char route[LDC_PATH_MAX];
    char metered_interfaces[1024]; /* ",a,b," for a whole-name search */
    bool cellular_metered;
} linux_conditions_t;

/* ---- small file reads ------------------------------------------------------------------- */

/* Joins up to three parts with '/'; false when the result does not fit. */
static bool join(char *out, size_t size, const char *a, const char *b, const char *c) {
    int written = c ? snprintf(out, size, "%s/%s/%s", a, b, c) : snprintf(out, size, "%s/%s", a, b);
    return written > 0 && (size_t)written < size;
}

/* Reads a small text file into `buf` (NUL-terminated, trailing newlines cut); false when it cannot. */
static bool read_text(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;
    if (fd < 0) {
        return false;
    }
    n = read(fd, buf, size - 1);
    close(fd);
    if (n < 0) {
        return false;
    }
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) {
        buf[--n] = '\0';
    }
    return true;
}

static bool read_entry(const char *dir, const char *entry, const char *file, char *buf, size_t size) {
    char path[LDC_PATH_MAX];
    return join(path, sizeof path, dir, entry, file) && read_text(path, buf, size);
}

/* A non-negative decimal integer file; false when missing or not a number. */
static bool read_u64(const char *dir, const char *entry, const char *file, unsigned long long *out) {
    char text[64];
    char *end = NULL;
    if (!read_entry(dir, entry, file, text, sizeof text) || text[0] < '0' || text[0] > '9') {
        return false;
    }
    errno = 0;
    *out = strtoull(text, &end, 10);
    return errno == 0 && end && *end == '\0';
}

static bool exists(const char *dir, const char *entry, const char *file) {
    char path[LDC_PATH_MAX];
    struct stat st;
    return join(path, sizeof path, dir, entry, file) && stat(path, &st) == 0;
}

/* ---- network ---------------------------------------------------------------------------- */

/* The kind of one interface, or -1 when it is not usable (loopback, down, unknown). */
static int interface_kind(const linux_conditions_t *self, const char *name) {
    char text[512];
    unsigned long long type = 0;
    if (!read_entry(self->net, name, "operstate", text, sizeof text)) {
        return -1;
    }
    if (strcmp(text, "up") != 0) {
        /* "unknown" is what many drivers (and tun, ppp) report while working: trust the carrier. */
        unsigned long long carrier = 0;
        if (strcmp(text, "unknown") != 0 || !read_u64(self->net, name, "carrier", &carrier) || carrier != 1) {
            return -1;
        }
    }
    if (read_u64(self->net, name, "type", &type) && type == 772) { /* ARPHRD_LOOPBACK */
        return -1;
    }
    if (exists(self->net, name, "wireless") || exists(self->net, name, "phy80211")) {
        return HH_NETWORK_WIFI;
    }
    if (read_entry(self->net, name, "uevent", text, sizeof text)) {
        if (strstr(text, "DEVTYPE=wlan")) {
            return HH_NETWORK_WIFI;
        }
        if (strstr(text, "DEVTYPE=wwan")) {
            return HH_NETWORK_CELLULAR;
        }
    }
    if (type == 512) { /* ARPHRD_PPP: a modem link */
        return HH_NETWORK_CELLULAR;
    }
    return HH_NETWORK_ETHERNET;
}

static bool is_listed(const char *list, const char *name) {
    char needle[LDC_NAME_MAX + 2];
    int written = snprintf(needle, sizeof needle, ",%s,", name);
    return written > 0 && (size_t)written < sizeof needle && strstr(list, needle) != NULL;
}

static void set_network(const linux_conditions_t *self, const char *name, int kind,
                        hh_device_conditions_t *out) {
    out->network = kind;
    out->metered =
        (kind == HH_NETWORK_CELLULAR && self->cellular_metered) || is_listed(self->metered_interfaces, name);
}

/* The default route's interface with the lowest metric, into `name`; false when there is none. */
static bool default_route(const linux_conditions_t *self, char *name, size_t size) {
    FILE *file = fopen(self->route, "r");
    char line[512];
    unsigned long best_metric = 0;
    bool found = false;
    int count = 0;
    if (!file) {
        return false;
    }
    /* Iface Destination Gateway Flags RefCnt Use Metric Mask ...; the first line is the header. */
    while (count++ < LDC_MAX_ROUTES && fgets(line, sizeof line, file)) {
        char iface[LDC_NAME_MAX];
        unsigned long destination, gateway, flags, refcnt, use, metric, mask;
        if (sscanf(line, "%63s %lx %lx %lx %lu %lu %lu %lx", iface, &destination, &gateway, &flags, &refcnt,
                   &use, &metric, &mask) != 8) {
            continue;
        }
        /* RTF_UP (0x1); destination and mask 0: the default route. */
        if (destination != 0 || mask != 0 || !(flags & 0x1)) {
            continue;
        }
        if (!found || metric < best_metric) {
            if (strlen(iface) >= size) {
                continue;
            }
            strcpy(name, iface);
            best_metric = metric;
            found = true;
        }
    }
    fclose(file);
    return found;
}

static void read_network(const linux_conditions_t *self, hh_device_conditions_t *out) {
    char route_name[LDC_NAME_MAX];
    char best_name[LDC_NAME_MAX] = "";
    int best_kind = -1;
    int count = 0;
    DIR *dir;
    struct dirent *entry;
    if (default_route(self, route_name, sizeof route_name)) {
        int kind = interface_kind(self, route_name);
        if (kind >= 0) {
            set_network(self, route_name, kind, out);
            return;
        }
    }
    dir = opendir(self->net);
    if (!dir) {
        out->network = HH_NETWORK_NONE;
        return;
    }
    /* No usable default route: the best interface that is up (ethernet, wifi, cellular). */
    while (count++ < LDC_MAX_ENTRIES && (entry = readdir(dir)) != NULL) {
        static const int rank[] = {0, 2, 1, 3}; /* by HH_NETWORK_*: none, wifi, cellular, ethernet */
        int kind;
        if (entry->d_name[0] == '.' || strlen(entry->d_name) >= sizeof best_name) {
            continue;
        }
        kind = interface_kind(self, entry->d_name);
        if (kind >= 0 && (best_kind < 0 || rank[kind] > rank[best_kind])) {
            best_kind = kind;
            strcpy(best_name, entry->d_name);
        }
    }
    closedir(dir);
    if (best_kind < 0) {
        out->network = HH_NETWORK_NONE;
        return;
    }
    set_network(self, best_name, best_kind, out);
}

/* ---- power ------------------------------------------------------------------------------ */

/* One battery's level in 0...1, or a negative number when it tells none. */
static double battery_level(const char *dir, const char *name) {
    unsigned long long now = 0, full = 0, capacity = 0;
    if (read_u64(dir, name, "capacity", &capacity)) {
        return capacity > 100 ? 1.0 : (double)capacity / 100.0;
    }
    if ((read_u64(dir, name, "energy_now", &now) && read_u64(dir, name, "energy_full", &full)) ||
        (read_u64(dir, name, "charge_now", &now) && read_u64(dir, name, "charge_full", &full))) {
        if (full == 0) {
            return -1.0;
        }
        return now >= full ? 1.0 : (double)now / (double)full;
    }
    return -1.0;
}

static void read_power(const linux_conditions_t *self, hh_device_conditions_t *out) {
    DIR *dir = opendir(self->power_supply);
    struct dirent *entry;
    double level_sum = 0;
    int levels = 0, count = 0;
    bool any_charging = false, any_discharging = false, mains_online = false, mains_seen = false;
    if (!dir) {
        return; /* no power_supply class: no battery, charging unknown (the zero-filled answer) */
    }
    while (count++ < LDC_MAX_ENTRIES && (entry = readdir(dir)) != NULL) {
        char type[64], text[64];
        unsigned long long flag = 0;
        if (entry->d_name[0] == '.' ||
            !read_entry(self->power_supply, entry->d_name, "type", type, sizeof type)) {
            continue;
        }
        if (strcmp(type, "Mains") == 0 || strcmp(type, "USB") == 0) {
            mains_seen = true;
            if (read_u64(self->power_supply, entry->d_name, "online", &flag) && flag == 1) {
                mains_online = true;
            }
            continue;
        }
        if (strcmp(type, "Battery") != 0) {
            continue;
        }
        /* A mouse's or a headset's battery does not power the system. */
        if (read_entry(self->power_supply, entry->d_name, "scope", text, sizeof text) &&
            strcmp(text, "Device") == 0) {
            continue;
        }
        if (read_u64(self->power_supply, entry->d_name, "present", &flag) && flag == 0) {
            continue;
        }
        {
            double level = battery_level(self->power_supply, entry->d_name);
            if (level >= 0) {
                level_sum += level;
                levels++;
            }
        }
        if (read_entry(self->power_supply, entry->d_name, "status", text, sizeof text)) {
            if (strcmp(text, "Charging") == 0) {
                any_charging = true;
            } else if (strcmp(text, "Discharging") == 0) {
                any_discharging = true;
            }
        }
    }
    closedir(dir);
    if (levels > 0) {
        double level = level_sum / levels;
        out->has_battery = true;
        out->battery_level = level < 0 ? 0 : level > 1 ? 1 : level;
    }
    if (any_charging) {
        out->charging = HH_CHARGING_YES;
    } else if (any_discharging) {
        out->charging = HH_CHARGING_NO;
    } else if (mains_seen) {
        /* "Full", "Not charging" or no battery at all: on power exactly when a supply is online. */
        out->charging = mains_online ? HH_CHARGING_YES : HH_CHARGING_NO;
    }
}

/* ---- storage ---------------------------------------------------------------------------- */

static void read_free_bytes(const char *data_directory, hh_device_conditions_t *out) {
    char path[LDC_PATH_MAX];
    struct statvfs st;
    size_t length = strlen(data_directory);
    int attempts = 0;
    if (length == 0 || length >= sizeof path) {
        return;
    }
    memcpy(path, data_directory, length + 1);
    /* Not created yet: the nearest existing parent is on the file system it will be on. */
    while (statvfs(path, &st) != 0) {
        char *slash = strrchr(path, '/');
        if (errno != ENOENT || !slash || ++attempts > 256) {
            return;
        }
        if (slash == path) {
            path[1] = '\0';
        } else {
            *slash = '\0';
        }
    }
    if (st.f_frsize != 0 && st.f_bavail > UINT64_MAX / st.f_frsize) {
        out->free_bytes = UINT64_MAX;
    } else {
        out->free_bytes = (uint64_t)st.f_bavail * (uint64_t)st.f_frsize;
    }
    out->has_free_bytes = true;
}

/* ---- the plugin ------------------------------------------------------------------------- */

static bool config_path(const hh_host_t *host, const char *key, char *out, size_t size) {
    hh_value_t value;
    if (host->config_get(host, key, &value) != HH_OK || value.type != HH_VALUE_STRING ||
        value.of.string.length == 0) {
        return false;
    }
    if (value.of.string.length >= size || memchr(value.of.string.data, '\0', value.of.string.length)) {
        return false;
    }
    memcpy(out, value.of.string.data, value.of.string.length);
    out[value.of.string.length] = '\0';
    return true;
}

static hh_status_t linux_create(const hh_host_t *host, void **out_instance) {
    linux_conditions_t *self = calloc(1, sizeof *self);
    hh_value_t value;
    char list[sizeof self->metered_interfaces - 2] = "";
    if (!self) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    if (!config_path(host, "power_supply_path", self->power_supply, sizeof self->power_supply)) {
        strcpy(self->power_supply, "/sys/class/power_supply");
    }
    if (!config_path(host, "net_path", self->net, sizeof self->net)) {
        strcpy(self->net, "/sys/class/net");
    }
    if (!config_path(host, "route_path", self->route, sizeof self->route)) {
        strcpy(self->route, "/proc/net/route");
    }
    self->cellular_metered = true;
    if (host->config_get(host, "cellular_metered", &value) == HH_OK && value.type == HH_VALUE_BOOL) {
        self->cellular_metered = value.of.boolean;
    }
    if (host->config_get(host, "metered_interfaces", &value) == HH_OK && value.type == HH_VALUE_STRING &&
        value.of.string.length > 0) {
        size_t i, n = 0;
        if (value.of.string.length >= sizeof list) {
            free(self);
            return hh_report(host, HH_ERR_CONFIG, "'metered_interfaces' is longer than %zu bytes",
                             sizeof list - 1);
        }
        for (i = 0; i < value.of.string.length; i++) { /* drop spaces: "usb0, wwan0" */
            if (value.of.string.data[i] != ' ') {
                list[n++] = value.of.string.data[i];
            }
        }
        list[n] = '\0';
    }
    snprintf(self->metered_interfaces, sizeof self->metered_interfaces, ",%s,", list);
    *out_instance = self;
    return HH_OK;
}

static void linux_destroy(void *instance) {
    free(instance);
}

/* [thread-safe]: reads the instance's constant settings and the files afresh. */
static hh_status_t linux_read_conditions(void *instance, const char *data_directory,
                                         hh_device_conditions_t *out) {
    const linux_conditions_t *self = instance;
    if (!self || !data_directory || !out) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    read_network(self, out);
    read_power(self, out);
    read_free_bytes(data_directory, out);
    return HH_OK;
}

static const hh_device_conditions_v1_t linux_api = {
    .read_conditions = linux_read_conditions,
};

HH_SINGLE_PLUGIN_LIBRARY("linux-device-conditions", "Linux device conditions",
                         "Network, battery and free space from /proc/net/route, /sys/class/net, "
                         "/sys/class/power_supply and statvfs.",
                         "1.0.0", HH_KIND_DEVICE_CONDITIONS, &linux_api, linux_create, linux_destroy);
