/*
 * A test-only augmentation that edits every way the editor allows, in an order where the order
 * matters: it removes "Drop", replaces "Level" with Level + 1, sets "Added" twice (the second
 * replaces the first), removes "Missing" (HH_ERR_NOT_FOUND, ignored), sets "Drop" again (now
 * appended at the end) and copies the event's name into "Seen Name". Built as a .so and as a .wasm
 * it must leave the same attributes in the same order.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <stdlib.h>

static hh_status_t editing_create(const hh_host_t *host, void **out_instance) {
    (void)host;
    *out_instance = NULL;
    return HH_OK;
}

static void editing_destroy(void *instance) {
    (void)instance;
}

static bool editing_false(void *instance) {
    (void)instance;
    return false;
}

static bool editing_true(void *instance) {
    (void)instance;
    return true;
}

static hh_value_t int64_value(int64_t number) {
    hh_value_t value = hh_value_null();
    value.type = HH_VALUE_INT64;
    value.of.int64 = number;
    return value;
}

static hh_value_t string_value(hh_string_t text) {
    hh_value_t value = hh_value_null();
    value.type = HH_VALUE_STRING;
    value.of.string = text;
    return value;
}

static hh_status_t editing_augment(void *instance, const hh_event_view_t *event,
                                   const hh_event_editor_t *editor) {
    (void)instance;
    hh_value_t level;
    int64_t next = 1;
    if (event->get_attribute(event, hh_string_from_cstr("Level"), &level) == HH_OK &&
        level.type == HH_VALUE_INT64) {
        next = level.of.int64 + 1;
    }
    editor->remove_attribute(editor, hh_string_from_cstr("Drop"));
    hh_value_t value = int64_value(next);
    hh_status_t status = editor->set_attribute(editor, hh_string_from_cstr("Level"), &value);
    value = string_value(hh_string_from_cstr("first"));
    status = status ? status : editor->set_attribute(editor, hh_string_from_cstr("Added"), &value);
    value = string_value(hh_string_from_cstr("second"));
    status = status ? status : editor->set_attribute(editor, hh_string_from_cstr("Added"), &value);
    if (editor->remove_attribute(editor, hh_string_from_cstr("Missing")) != HH_ERR_NOT_FOUND) {
        return HH_ERR_INTERNAL;
    }
    value = hh_value_null();
    value.type = HH_VALUE_BOOL;
    value.of.boolean = true;
    status = status ? status : editor->set_attribute(editor, hh_string_from_cstr("Drop"), &value);
    value = string_value(event->name);
    status = status ? status : editor->set_attribute(editor, hh_string_from_cstr("Seen Name"), &value);
    return status;
}

static const hh_augmentation_v1_t editing_api = {editing_false, editing_true, editing_augment};

HH_SINGLE_PLUGIN_LIBRARY("editing-augmentation", "Editing augmentation", "Edits every way the editor allows.",
                         "1.0.0", HH_KIND_AUGMENTATION, &editing_api, editing_create, editing_destroy);
