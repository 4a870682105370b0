/*
 * A test-only augmentation that tries every edit the header says the editor refuses and records
 * the status it heard for each as an int attribute "Heard <what>": an empty name, a name over
 * 1 KiB, a string over 1 MiB, NaN and both infinities, times before 1970 and after 9999, names
 * and strings that are not valid UTF-8 (a stray byte, a cut sequence, a surrogate, an overlong
 * form), and appends past 1,000 attributes ("Extra <n>" until refused; "Heard Count Limit" is set
 * first so that recording it replaces rather than appends). It also makes healthy edits: removes
 * "Drop", sets "Last Valid Time" to the last valid millisecond, "Unicode" to valid UTF-8 and
 * "Fine" to 2.5. Built as a .so (in process or in a worker) and as a .wasm, it must hear the same
 * statuses and leave the same event.
 */
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hh_status_t refused_create(const hh_host_t *host, void **out_instance) {
    (void)host;
    *out_instance = NULL;
    return HH_OK;
}

static void refused_destroy(void *instance) {
    (void)instance;
}

static bool refused_false(void *instance) {
    (void)instance;
    return false;
}

static bool refused_true(void *instance) {
    (void)instance;
    return true;
}

static hh_value_t typed(hh_value_type_t type) {
    hh_value_t value = hh_value_null();
    value.type = type;
    return value;
}

static hh_value_t int64_value(int64_t number) {
    hh_value_t value = typed(HH_VALUE_INT64);
    value.of.int64 = number;
    return value;
}

static hh_value_t double_value(double number) {
    hh_value_t value = typed(HH_VALUE_DOUBLE);
    value.of.real = number;
    return value;
}

static hh_value_t time_value(int64_t ms) {
    hh_value_t value = typed(HH_VALUE_TIME_MS);
    value.of.time_ms = ms;
    return value;
}

static hh_value_t string_value(const char *bytes, size_t length) {
    hh_value_t value = typed(HH_VALUE_STRING);
    value.of.string.data = bytes;
    value.of.string.length = length;
    return value;
}

static hh_string_t bytes_string(const char *bytes, size_t length) {
    hh_string_t text = {bytes, length};
    return text;
}

/* Sets `name` to `value` and records what the editor answered as "Heard <label>". */
static void try_set(const hh_event_editor_t *editor, const char *label, hh_string_t name, hh_value_t value) {
    hh_status_t status = editor->set_attribute(editor, name, &value);
    char heard[128];
    snprintf(heard, sizeof heard, "Heard %s", label);
    hh_value_t recorded = int64_value(status);
    editor->set_attribute(editor, hh_string_from_cstr(heard), &recorded);
}

static hh_status_t refused_augment(void *instance, const hh_event_view_t *event,
                                   const hh_event_editor_t *editor) {
    (void)instance;
    (void)event;
    hh_value_t seven = int64_value(7);

    try_set(editor, "Empty Name", bytes_string("", 0), seven);
    static char long_name[1025];
    memset(long_name, 'n', sizeof long_name);
    try_set(editor, "Long Name", bytes_string(long_name, sizeof long_name), seven);
    size_t big_length = 1024 * 1024 + 1;
    char *big = malloc(big_length);
    if (!big) {
        return HH_ERR_INTERNAL;
    }
    memset(big, 'x', big_length);
    try_set(editor, "Big Value", hh_string_from_cstr("Big Value"), string_value(big, big_length));
    free(big);
    try_set(editor, "NaN", hh_string_from_cstr("NaN"), double_value(NAN));
    try_set(editor, "Infinity", hh_string_from_cstr("Infinity"), double_value(INFINITY));
    try_set(editor, "Minus Infinity", hh_string_from_cstr("Minus Infinity"), double_value(-INFINITY));
    try_set(editor, "Before 1970", hh_string_from_cstr("Before 1970"), time_value(-1));
    try_set(editor, "After 9999", hh_string_from_cstr("After 9999"), time_value(INT64_C(253402300800000)));
    try_set(editor, "Stray Byte", hh_string_from_cstr("Stray Byte"),
            string_value("a\xff"
                         "b",
                         3));
    try_set(editor, "Cut Sequence", hh_string_from_cstr("Cut Sequence"), string_value("\xc3", 1));
    try_set(editor, "Surrogate", hh_string_from_cstr("Surrogate"), string_value("\xed\xa0\x80", 3));
    try_set(editor, "Overlong", hh_string_from_cstr("Overlong"), string_value("\xc0\xaf", 2));
    try_set(editor, "Stray Byte Name", bytes_string("Name \xfe", 6), seven);

    editor->remove_attribute(editor, hh_string_from_cstr("Drop"));
    try_set(editor, "Last Valid Time", hh_string_from_cstr("Last Valid Time"),
            time_value(INT64_C(253402300799999)));
    const char *unicode = "\xc3\x9c"
                          "n\xc3\xaf"
                          "code \xe2\x9c\x93 \xf0\x9d\x84\x9e"; /* Ünïcode ✓ 𝄞 */
    try_set(editor, "Unicode", hh_string_from_cstr("Unicode"), string_value(unicode, strlen(unicode)));
    try_set(editor, "Fine", hh_string_from_cstr("Fine"), double_value(2.5));

    hh_value_t pending = hh_value_null();
    editor->set_attribute(editor, hh_string_from_cstr("Heard Count Limit"), &pending);
    hh_status_t status = HH_OK;
    for (int n = 0; n < 5001 && status == HH_OK; n++) {
        char name[32];
        snprintf(name, sizeof name, "Extra %d", n);
        hh_value_t number = int64_value(n);
        status = editor->set_attribute(editor, hh_string_from_cstr(name), &number);
    }
    hh_value_t recorded = int64_value(status);
    editor->set_attribute(editor, hh_string_from_cstr("Heard Count Limit"), &recorded);
    return HH_OK;
}

static const hh_augmentation_v1_t refused_api = {refused_false, refused_true, refused_augment};

HH_SINGLE_PLUGIN_LIBRARY("refused-edits", "Refused edits", "Tries every edit the editor refuses.", "1.0.0",
                         HH_KIND_AUGMENTATION, &refused_api, refused_create, refused_destroy);
