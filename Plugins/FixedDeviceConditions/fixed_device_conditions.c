/*
 * fixed-device-conditions: a device_conditions plugin whose answer comes from its configuration
 * and, when `file` is set, from a small text file it re-reads whenever the file changes. Tests
 * and servers switch the network or the battery at run time by rewriting the file. Written in C.
 *
 * The file (the README documents it): one `key = value` per line (`key: value` also works),
 * blank lines and lines starting with '#' ignored, keys as the config's:
 *
 *     network = cellular          # none | wifi | cellular | ethernet
 *     metered = true              # true | false
 *     battery_level = 0.15        # 0...1, or none (no battery)
 *     charging = no               # yes | no | unknown
 *     free_bytes = 500000000      # bytes, or unknown
 *
 * A key the file sets overrides the config's value; a key it leaves out keeps the config's. A
 * file that does not exist leaves the config's values. A change is noticed by the file's
 * modification time, size or inode: replace it atomically (write a new file, then rename it over
 * the old one) so a reader never sees half a file. A file with a bad line makes every call fail
 * with HH_ERR_CONFIG naming the line, until the file changes again.
 */
#define _POSIX_C_SOURCE 200809L

#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FDC_PATH_MAX    4096
#define FDC_FILE_MAX    65536
#define FDC_MESSAGE_MAX 512

typedef struct fixed_conditions {
    const hh_host_t *host;
    hh_device_conditions_t configured; /* from the config, checked at create */
    char file[FDC_PATH_MAX];           /* "" when no file is configured */

    pthread_mutex_t lock; /* guards everything below */
    bool file_seen;       /* the stat key below describes a file read before */
    struct timespec mtime;
    off_t size;
    ino_t inode;
    hh_device_conditions_t current; /* configured, overridden by the file */
    char problem[FDC_MESSAGE_MAX];  /* "" or why the file was refused */
} fixed_conditions_t;

/* ---- values ----------------------------------------------------------------------------- */

static bool parse_network(const char *text, hh_network_type_t *out) {
    static const char *const names[] = {"none", "wifi", "cellular", "ethernet"};
    int i;
    for (i = 0; i < 4; i++) {
        if (strcmp(text, names[i]) == 0) {
            *out = i; /* HH_NETWORK_NONE ... HH_NETWORK_ETHERNET, in that order */
            return true;
        }
    }
    return false;
}

static bool parse_charging(const char *text, hh_charging_t *out) {
    if (strcmp(text, "unknown") == 0) {
        *out = HH_CHARGING_UNKNOWN;
    } else if (strcmp(text, "no") == 0 || strcmp(text, "false") == 0) {
        *out = HH_CHARGING_NO;
    } else if (strcmp(text, "yes") == 0 || strcmp(text, "true") == 0) {
        *out = HH_CHARGING_YES;
    } else {
        return false;
    }
    return true;
}

static bool parse_bool(const char *text, bool *out) {
    if (strcmp(text, "true") == 0 || strcmp(text, "yes") == 0) {
        *out = true;
    } else if (strcmp(text, "false") == 0 || strcmp(text, "no") == 0) {
        *out = false;
    } else {
        return false;
    }
    return true;
}

static bool valid_level(double level) {
    return isfinite(level) && level >= 0.0 && level <= 1.0;
}

/* Sets `key` in *c from `text`; false with a message in `why` when the value is not one. */
static bool apply(hh_device_conditions_t *c, const char *key, const char *text, char *why, size_t why_size) {
    char *end = NULL;
    if (strcmp(key, "network") == 0) {
        if (parse_network(text, &c->network)) {
            return true;
        }
        snprintf(why, why_size, "network '%s' is not none, wifi, cellular or ethernet", text);
    } else if (strcmp(key, "metered") == 0) {
        if (parse_bool(text, &c->metered)) {
            return true;
        }
        snprintf(why, why_size, "metered '%s' is not true or false", text);
    } else if (strcmp(key, "battery_level") == 0) {
        double level;
        if (strcmp(text, "none") == 0) {
            c->has_battery = false;
            c->battery_level = 0;
            return true;
        }
        errno = 0;
        level = strtod(text, &end);
        if (errno == 0 && end != text && *end == '\0' && valid_level(level)) {
            c->has_battery = true;
            c->battery_level = level;
            return true;
        }
        snprintf(why, why_size, "battery_level '%s' is not a number within 0...1, or none", text);
    } else if (strcmp(key, "charging") == 0) {
        if (parse_charging(text, &c->charging)) {
            return true;
        }
        snprintf(why, why_size, "charging '%s' is not yes, no or unknown", text);
    } else if (strcmp(key, "free_bytes") == 0) {
        unsigned long long bytes;
        if (strcmp(text, "unknown") == 0) {
            c->has_free_bytes = false;
            c->free_bytes = 0;
            return true;
        }
        errno = 0;
        bytes = strtoull(text, &end, 10);
        if (errno == 0 && text[0] >= '0' && text[0] <= '9' && end != text && *end == '\0') {
            c->has_free_bytes = true;
            c->free_bytes = (uint64_t)bytes;
            return true;
        }
        snprintf(why, why_size, "free_bytes '%s' is not a whole number of bytes, or unknown", text);
    } else {
        snprintf(why, why_size,
                 "unknown key '%s' (expected network, metered, battery_level, charging or free_bytes)", key);
    }
    return false;
}

/* ---- the file --------------------------------------------------------------------------- */

static char *trim(char *s) {
    char *end;
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) {
        *--end = '\0';
    }
    return s;
}

/* Parses `text` (NUL-terminated, modified) over `base` into *out; false with `why` on a bad line. */
static bool parse_file(char *text, const hh_device_conditions_t *base, hh_device_conditions_t *out, char *why,
                       size_t why_size) {
    hh_device_conditions_t c = *base;
    int line_number = 0;
    char *line = text;
    while (line && *line) {
        char *next = strchr(line, '\n');
        char *separator, *key, *value, *comment;
        char reason[FDC_MESSAGE_MAX - 64];
        if (next) {
            *next++ = '\0';
        }
        line_number++;
        comment = strchr(line, '#');
        if (comment) {
            *comment = '\0';
        }
        line = trim(line);
        if (*line != '\0') {
            separator = strpbrk(line, "=:");
            if (!separator) {
                snprintf(why, why_size, "line %d: expected 'key = value'", line_number);
                return false;
            }
            *separator = '\0';
            key = trim(line);
            value = trim(separator + 1);
            if (!apply(&c, key, value, reason, sizeof reason)) {
                snprintf(why, why_size, "line %d: %s", line_number, reason);
                return false;
            }
        }
        line = next;
    }
    *out = c;
    return true;
}

/* Re-reads the file when its stat key changed. Called with the lock held. */
static void refresh(fixed_conditions_t *self) {
    struct stat st;
    FILE *file;
    char *text;
    size_t length;
    hh_device_conditions_t parsed;
    char why[FDC_MESSAGE_MAX - 128];
    if (stat(self->file, &st) != 0) {
        if (errno == ENOENT) {
            self->file_seen = false;
            self->current = self->configured;
            self->problem[0] = '\0';
        } else {
            snprintf(self->problem, sizeof self->problem, "cannot read it: %s", strerror(errno));
        }
        return;
    }
    if (self->file_seen && st.st_mtim.tv_sec == self->mtime.tv_sec &&
        st.st_mtim.tv_nsec == self->mtime.tv_nsec && st.st_size == self->size && st.st_ino == self->inode) {
        return; /* unchanged: keep what it said */
    }
    self->file_seen = true;
    self->mtime = st.st_mtim;
    self->size = st.st_size;
    self->inode = st.st_ino;
    if (st.st_size > FDC_FILE_MAX) {
        snprintf(self->problem, sizeof self->problem, "it is %lld bytes; at most %d", (long long)st.st_size,
                 FDC_FILE_MAX);
        return;
    }
    file = fopen(self->file, "r");
    if (!file) {
        snprintf(self->problem, sizeof self->problem, "cannot read it: %s", strerror(errno));
        return;
    }
    text = malloc(FDC_FILE_MAX + 1);
    if (!text) {
        fclose(file);
        snprintf(self->problem, sizeof self->problem, "out of memory");
        return;
    }
    length = fread(text, 1, FDC_FILE_MAX, file);
    fclose(file);
    text[length] = '\0';
    if (memchr(text, '\0', length)) {
        snprintf(self->problem, sizeof self->problem, "it holds a NUL byte: not a text file");
    } else if (parse_file(text, &self->configured, &parsed, why, sizeof why)) {
        self->current = parsed;
        self->problem[0] = '\0';
    } else {
        snprintf(self->problem, sizeof self->problem, "%s", why);
    }
    free(text);
}

/* ---- the plugin ------------------------------------------------------------------------- */

/* A config string as a NUL-terminated copy in `out`; false when unset or too long. */
static bool config_text(const hh_host_t *host, const char *key, char *out, size_t size) {
    hh_value_t value;
    if (host->config_get(host, key, &value) != HH_OK || value.type != HH_VALUE_STRING) {
        return false;
    }
    if (value.of.string.length >= size ||
        (value.of.string.length > 0 && memchr(value.of.string.data, '\0', value.of.string.length))) {
        return false;
    }
    if (value.of.string.length > 0) {
        memcpy(out, value.of.string.data, value.of.string.length);
    }
    out[value.of.string.length] = '\0';
    return true;
}

static hh_status_t fixed_create(const hh_host_t *host, void **out_instance) {
    hh_device_conditions_t c;
    hh_value_t value;
    char text[FDC_PATH_MAX];
    char why[FDC_MESSAGE_MAX];
    fixed_conditions_t *self;
    memset(&c, 0, sizeof c);
    c.network = HH_NETWORK_ETHERNET;
    /* Strings go through the same parser as the file, so both accept the same words. */
    static const char *const string_keys[] = {"network", "charging"};
    size_t i;
    for (i = 0; i < sizeof string_keys / sizeof string_keys[0]; i++) {
        if (config_text(host, string_keys[i], text, sizeof text) &&
            !apply(&c, string_keys[i], text, why, sizeof why)) {
            return hh_report(host, HH_ERR_CONFIG, "%s", why);
        }
    }
    if (host->config_get(host, "metered", &value) == HH_OK && value.type == HH_VALUE_BOOL) {
        c.metered = value.of.boolean;
    }
    if (host->config_get(host, "battery_level", &value) == HH_OK) {
        double level = value.type == HH_VALUE_DOUBLE  ? value.of.real
                       : value.type == HH_VALUE_INT64 ? (double)value.of.int64
                                                      : -1.0;
        if (!valid_level(level)) {
            return hh_report(host, HH_ERR_CONFIG,
                             "'battery_level' must be a number within 0...1 (leave it out: no battery)");
        }
        c.has_battery = true;
        c.battery_level = level;
    }
    if (host->config_get(host, "free_bytes", &value) == HH_OK) {
        if (value.type != HH_VALUE_INT64 || value.of.int64 < 0) {
            return hh_report(
                host, HH_ERR_CONFIG,
                "'free_bytes' must be a whole number of bytes, at least 0 (leave it out: unknown)");
        }
        c.has_free_bytes = true;
        c.free_bytes = (uint64_t)value.of.int64;
    }
    self = calloc(1, sizeof *self);
    if (!self) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    self->host = host;
    self->configured = c;
    self->current = c;
    if (config_text(host, "file", text, sizeof text) && text[0] != '\0') {
        int written = text[0] == '/'
                          ? snprintf(self->file, sizeof self->file, "%s", text)
                          : snprintf(self->file, sizeof self->file, "%s/%s", host->data_directory, text);
        if (written < 0 || (size_t)written >= sizeof self->file) {
            free(self);
            return hh_report(host, HH_ERR_CONFIG, "'file' is too long a path");
        }
    }
    if (pthread_mutex_init(&self->lock, NULL) != 0) {
        free(self);
        return hh_report(host, HH_ERR_INTERNAL, "cannot create a mutex");
    }
    *out_instance = self;
    return HH_OK;
}

static void fixed_destroy(void *instance) {
    fixed_conditions_t *self = instance;
    if (self) {
        pthread_mutex_destroy(&self->lock);
        free(self);
    }
}

/* [thread-safe]: the file's state is behind the instance's mutex. */
static hh_status_t fixed_read_conditions(void *instance, const char *data_directory,
                                         hh_device_conditions_t *out) {
    fixed_conditions_t *self = instance;
    char problem[FDC_MESSAGE_MAX];
    if (!self || !data_directory || !out) {
        return HH_ERR_INVALID_ARGUMENT;
    }
    if (self->file[0] == '\0') {
        *out = self->configured;
        return HH_OK;
    }
    pthread_mutex_lock(&self->lock);
    refresh(self);
    memcpy(problem, self->problem, sizeof problem);
    *out = self->current;
    pthread_mutex_unlock(&self->lock);
    if (problem[0] != '\0') {
        return hh_report(self->host, HH_ERR_CONFIG, "conditions file '%s': %s", self->file, problem);
    }
    return HH_OK;
}

static const hh_device_conditions_v1_t fixed_api = {
    .read_conditions = fixed_read_conditions,
};

HH_SINGLE_PLUGIN_LIBRARY("fixed-device-conditions", "Fixed device conditions",
                         "Answers the network, battery and free space from its configuration and a file it "
                         "re-reads when it changes.",
                         "1.0.0", HH_KIND_DEVICE_CONDITIONS, &fixed_api, fixed_create, fixed_destroy);
