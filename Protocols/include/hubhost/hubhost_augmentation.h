/*
 * hubhost plugin ABI v1: the `augmentation` kind (the Engage event augmentation plugins).
 *
 * An augmentation plugin adds attributes to an event before it is stored and delivered (e.g.
 * location, weather). It reads the event through hh_event_view_t and changes it only through
 * hh_event_editor_t: it never frees, reallocates or keeps host memory.
 *
 * The host runs augmentation plugins in plugins.yaml order. A plugin whose
 * process_synchronously answers true finishes before later plugins start (they may depend on its
 * output); the others see the same input and may run concurrently (the host spreads calls over
 * threads when they take long enough to be worth it). The host bounds the whole augmentation of one
 * event by one timeout; an edit that arrives after the timeout is discarded.
 */
#ifndef HUBHOST_AUGMENTATION_H
#define HUBHOST_AUGMENTATION_H

#include "hubhost_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read access to an event. Host-owned; valid only during the augment call. */
typedef struct hh_event_view {
    void *event_data;     /* host-owned, opaque: pass back unchanged */
    hh_string_t event_id; /* the host's id for the event, for log messages */
    int32_t type_code;    /* the Universal Behavior code (e.g. 17 named event) */
    hh_string_t name;     /* the event's name (may be empty) */
    int64_t time_ms;      /* when the event happened, ms since epoch */

    /* The number of attributes. [any-thread] during the call. */
    size_t (*attribute_count)(const struct hh_event_view *view);

    /* Attribute at index (0 <= index < attribute_count): name and value are host-owned, valid
     * until the augment call returns or the attribute is changed through the editor.
     * HH_ERR_NOT_FOUND for an index out of range. [any-thread] during the call. */
    hh_status_t (*attribute_at)(const struct hh_event_view *view, size_t index, hh_string_t *out_name,
                                hh_value_t *out_value);

    /* Attribute by exact name (case-sensitive). HH_ERR_NOT_FOUND when absent. Same lifetime as
     * attribute_at. [any-thread] during the call. */
    hh_status_t (*get_attribute)(const struct hh_event_view *view, hh_string_t name, hh_value_t *out_value);
} hh_event_view_t;

/* Write access to an event. Host-owned; valid only during the augment call. The host copies
 * names and values at once. */
typedef struct hh_event_editor {
    void *editor_data; /* host-owned, opaque: pass back unchanged */

    /* Add or replace an attribute. HH_ERR_INVALID_ARGUMENT for an empty name, a string that is not
     * valid UTF-8, an unknown value type, or a value outside the host's event limits (a time
     * outside 1970..9999, a non-finite double, a name over 1 KiB, a string over 1 MiB, a new
     * attribute beyond 1,000 on the event); the event is then left unchanged.
     * [any-thread] during the call. */
    hh_status_t (*set_attribute)(const struct hh_event_editor *editor, hh_string_t name,
                                 const hh_value_t *value);

    /* Remove an attribute; HH_ERR_NOT_FOUND when absent. [any-thread] during the call. */
    hh_status_t (*remove_attribute)(const struct hh_event_editor *editor, hh_string_t name);
} hh_event_editor_t;

typedef struct hh_augmentation_v1 {
    /* True when later augmentation plugins depend on this one's output, so the host must finish
     * this plugin before starting them. Constant for the instance's life. [thread-safe] */
    bool (*process_synchronously)(void *instance);

    /* True when the data this plugin adds is available now (e.g. a location fix is cached).
     * The host may use it to decide how long to wait. [thread-safe] */
    bool (*is_supplemental_data_ready)(void *instance);

    /* Augment one event. `event` and `editor` are host-owned, borrowed for the call.
     * HH_OK: the edits made through `editor` are kept. Any other status: the host logs it (with
     * the message from report_error, the plugin id and the event id) and discards this plugin's
     * edits; the event goes on unchanged by it. The host may call augment for different events
     * concurrently. [thread-safe] */
    hh_status_t (*augment)(void *instance, const hh_event_view_t *event, const hh_event_editor_t *editor);
} hh_augmentation_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_AUGMENTATION_H */
