/*
 * hubhost plugin ABI v1: the `trigger_operator` kind (campaign trigger operators).
 *
 * An operator compares an event attribute's value with the value a campaign trigger names, and
 * answers true or false. The eight standard operators (EQUALS .. DOES_NOT_MATCH_REGEX) are
 * plugins of this kind; an integrator adds a new operator by adding a plugin, with no host change.
 * One library may export many operators, one descriptor each.
 */
#ifndef HUBHOST_TRIGGER_OPERATOR_H
#define HUBHOST_TRIGGER_OPERATOR_H

#include "hubhost_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hh_trigger_operator_v1 {
    /* The operator's name as campaigns and plugins.yaml spell it, e.g. "EQUALS", "STARTS_WITH".
     * Upper case letters, digits and '_'. NUL-terminated, static. */
    const char *operator_name;

    /* The operator's wire code in the campaign ping format (1 EQUALS .. 8 DOES_NOT_MATCH_REGEX),
     * or 0 for an operator that has no wire code and is named by string only. */
    int32_t wire_code;

    /* Compare. `event_value` is the attribute the event carries, `trigger_value` the value the
     * campaign's trigger gives; both host-owned, borrowed for the call.
     * HH_OK: *out_result holds the answer.
     * HH_ERR_TYPE_MISMATCH: the operator does not apply to these types (the host treats it as
     * false). Any other status: a failure (report_error first); the host treats it as false.
     * Must return in bounded time for any input (e.g. a regex engine with a step limit).
     * [thread-safe] */
    hh_status_t (*compare)(void *instance, const hh_value_t *event_value, const hh_value_t *trigger_value,
                           bool *out_result);
} hh_trigger_operator_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* HUBHOST_TRIGGER_OPERATOR_H */
