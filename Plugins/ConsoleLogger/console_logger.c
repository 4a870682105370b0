/*
 * console-logger: a logging plugin that writes human-readable records to stderr (or stdout).
 *
 * Written in plain C to prove the ABI needs no Swift. Output, one line per record:
 *
 *     2026-11-22T07:50:00.123Z ERROR    [hubhost.loader] instance 'geo' disabled: ...
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r under -std=c11 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct console_logger {
    FILE *stream;
    bool timestamps;
    bool color;
} console_logger_t;

static const char *severity_label(hh_severity_t severity) {
    switch (severity) {
    case HH_SEVERITY_CRITICAL_ERROR:
        return "CRITICAL";
    case HH_SEVERITY_ERROR:
        return "ERROR";
    case HH_SEVERITY_WARNING:
        return "WARNING";
    case HH_SEVERITY_INFO:
        return "INFO";
    default:
        return "?";
    }
}

static const char *severity_color(hh_severity_t severity) {
    switch (severity) {
    case HH_SEVERITY_CRITICAL_ERROR:
        return "\033[1;31m";
    case HH_SEVERITY_ERROR:
        return "\033[31m";
    case HH_SEVERITY_WARNING:
        return "\033[33m";
    default:
        return "\033[2m";
    }
}

/* Reads a bool setting; the host already checked its type against plugin.yaml. */
static bool config_bool(const hh_host_t *host, const char *key, bool fallback) {
    hh_value_t value;
    if (host->config_get(host, key, &value) == HH_OK && value.type == HH_VALUE_BOOL) {
        return value.of.boolean;
    }
    return fallback;
}

static hh_status_t console_create(const hh_host_t *host, void **out_instance) {
    hh_value_t stream_name;
    FILE *stream = stderr;
    if (host->config_get(host, "stream", &stream_name) == HH_OK && stream_name.type == HH_VALUE_STRING) {
        const hh_string_t s = stream_name.of.string;
        if (s.length == 6 && memcmp(s.data, "stdout", 6) == 0) {
            stream = stdout;
        } else if (!(s.length == 6 && memcmp(s.data, "stderr", 6) == 0)) {
            return hh_report(host, HH_ERR_CONFIG,
                             "config 'stream' must be \"stderr\" or \"stdout\", not \"%.*s\"",
                             (int)(s.length > 64 ? 64 : s.length), s.data ? s.data : "");
        }
    }
    console_logger_t *logger = calloc(1, sizeof *logger);
    if (!logger) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    logger->stream = stream;
    logger->timestamps = config_bool(host, "timestamps", true);
    logger->color = config_bool(host, "color", false);
    *out_instance = logger;
    return HH_OK;
}

static void console_destroy(void *instance) {
    console_logger_t *logger = instance;
    if (logger) {
        fflush(logger->stream);
        free(logger);
    }
}

static void console_log(void *instance, const hh_log_record_t *record) {
    console_logger_t *logger = instance;
    char stamp[32] = "";
    if (logger->timestamps) {
        time_t seconds = (time_t)(record->time_ms / 1000);
        struct tm utc;
        gmtime_r(&seconds, &utc);
        size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
        snprintf(stamp + n, sizeof stamp - n, ".%03dZ ", (int)(record->time_ms % 1000));
    }
    const char *on = logger->color ? severity_color(record->severity) : "";
    const char *off = logger->color ? "\033[0m" : "";
    /* One fprintf per record, so concurrent writers in other processes interleave by line. */
    fprintf(logger->stream, "%s%s%-8s%s [%.*s] %.*s\n", stamp, on, severity_label(record->severity), off,
            (int)record->source.length, record->source.data ? record->source.data : "",
            (int)record->message.length, record->message.data ? record->message.data : "");
}

static void console_flush(void *instance) {
    console_logger_t *logger = instance;
    fflush(logger->stream);
}

static const hh_logging_v1_t console_api = {
    .log = console_log,
    .flush = console_flush,
};

HH_SINGLE_PLUGIN_LIBRARY("console-logger", "Console logger",
                         "Writes log records to stderr, one human-readable line each.", "1.0.0",
                         HH_KIND_LOGGING, &console_api, console_create, console_destroy);
