/*
 * hubhost plugin ABI v1: the `logging` kind (the ZBiM logging delegate).
 *
 * A logging plugin receives every log record that passed the host's filter (the configured
 * severity and verbosity from plugins.yaml `logging:`). Filtering happens in the host before any
 * logging plugin is called, so a plugin sees only records the user asked for; it may filter
 * further with its own configuration.
 */
#ifndef HUBHOST_LOGGING_H
#define HUBHOST_LOGGING_H

#include "hubhost_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One log record. Everything in it is host-owned and borrowed for the duration of the call. */
typedef struct hh_log_record {
    hh_severity_t severity;   /* HH_SEVERITY_CRITICAL_ERROR .. HH_SEVERITY_INFO, never NONE */
    hh_verbosity_t verbosity; /* HH_VERBOSITY_DEBUG or HH_VERBOSITY_INFO, never NONE */
    int64_t time_ms;          /* wall time of the record, ms since 1970-01-01T00:00:00Z */
    hh_string_t source;       /* who logged: "hubhost", an engine ("hubhost.loader") or a
                                  plugin instance id */
    hh_string_t message;      /* UTF-8 text, no trailing newline */
} hh_log_record_t;

typedef struct hh_logging_v1 {
    /* Write one record. Must not block for long (the caller may be any engine thread); buffer if
     * the destination is slow. A record the plugin cannot write is dropped: there is no status,
     * and a logging plugin never calls host->log from here (the host drops such records).
     * [host-serialized] */
    void (*log)(void *instance, const hh_log_record_t *record);

    /* Optional (may be NULL): push buffered records to their destination. The host calls it
     * before shutdown and when a user asks for a flush. [host-serialized] */
    void (*flush)(void *instance);
} hh_logging_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_LOGGING_H */
