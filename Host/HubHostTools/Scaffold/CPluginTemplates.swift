import HubHostKit

/// The C source and the config of a new plugin of one kind, as `hubhost plugins new --lang c`
/// writes them: each kind's callbacks do something visible, configured by a key of plugin.yaml.
struct CPluginTemplate: Sendable {
    /// One line for the README: what the new plugin does.
    var summary: String
    /// The `config:` entries of plugin.yaml (YAML lines, indented two spaces), possibly empty.
    var config: String
    /// The `test_config:` entries the conformance suite creates the plugin with, or "" for none.
    var testConfig: String
    /// The `config:` of an instance in plugins.yaml, for the README (YAML lines indented six spaces).
    var instanceConfig: String
    /// How to see it work once loaded, for the README.
    var tryIt: String
    /// The C source.
    var source: String

    /// The names derived from the plugin id.
    struct Names: Sendable {
        /// The plugin id, e.g. "app-version".
        var id: String
        /// A C identifier prefix, e.g. "app_version".
        var symbol: String
        /// A trigger operator name (upper case letters, digits, '_'), e.g. "APP_VERSION".
        var operatorName: String

        init(id: String) {
            self.id = id
            var symbol = String(id.map { $0.isLetter || $0.isNumber ? $0 : "_" })
            if symbol.first?.isNumber ?? true { symbol = "p_" + symbol }
            self.symbol = symbol
            var op = String(id.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
            if op.first?.isNumber ?? true { op = "OP_" + op }
            self.operatorName = op
        }
    }

    /// The kinds `--lang c` writes, in the order the help lists them.
    static let kinds: [PluginKind] = [.augmentation, .triggerOperator, .logging, .advertiserID, .location]

    /// The template of `kind`, or nil when `--lang c` does not write that kind yet.
    static func template(_ kind: PluginKind, _ n: Names) -> CPluginTemplate? {
        switch kind {
        case .augmentation: return augmentation(n)
        case .triggerOperator: return triggerOperator(n)
        case .logging: return logging(n)
        case .advertiserID: return advertiserID(n)
        case .location: return location(n)
        default: return nil
        }
    }

    static func header(_ n: Names, _ what: String) -> String {
        #"""
        /* \#(n.id): \#(what)
         * Made by `hubhost plugins new`. Build with `make`, check with `make test`; the ABI rules and
         * every kind are in hubhost's docs/plugin-authoring.md. */
        #include <hubhost/hubhost.h>
        #include <hubhost/hubhost_plugin_helpers.h>


        """#
    }

    static func augmentation(_ n: Names) -> CPluginTemplate {
        let s = n.symbol
        return CPluginTemplate(
            summary:
                "an augmentation that adds the attribute named by `attribute` with the text of `value` to every event that does not carry it yet.",
            config: """
                  - key: attribute
                    type: string
                    default: Source
                    doc: The name of the attribute added to every event.
                  - key: value
                    type: string
                    required: true
                    doc: The text the attribute gets.

                """,
            testConfig: "  value: hello\n",
            instanceConfig: "      value: from \(n.id)\n",
            tryIt: "hubhost track \"PLAYER LOADED\" && hubhost events list --limit 1   # the event carries Source: from \(n.id)",
            source: header(n, "an augmentation that adds one attribute, from its config, to every event.")
                + #"""
                #include <stdlib.h>

                typedef struct \#(s) {
                    const hh_host_t *host; /* valid until destroy */
                    hh_string_t attribute; /* config bytes are host-owned and valid until destroy: no copy */
                    hh_value_t value;
                } \#(s)_t;

                static hh_status_t \#(s)_create(const hh_host_t *host, void **out_instance) {
                    hh_value_t value;
                    hh_string_t attribute = hh_config_string(host, "attribute");
                    if (attribute.length == 0) {
                        return hh_report(host, HH_ERR_CONFIG, "set 'attribute' to a name, e.g. attribute: Source");
                    }
                    if (host->config_get(host, "value", &value) != HH_OK || value.type != HH_VALUE_STRING) {
                        return hh_report(host, HH_ERR_CONFIG, "set 'value' to a text, e.g. value: hello");
                    }
                    \#(s)_t *self = malloc(sizeof *self);
                    if (!self) {
                        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
                    }
                    self->host = host;
                    self->attribute = attribute;
                    self->value = value;
                    *out_instance = self;
                    return HH_OK;
                }

                static void \#(s)_destroy(void *instance) {
                    free(instance);
                }

                /* Nothing later depends on this plugin's output, and its data is always ready. */
                static bool \#(s)_false(void *instance) {
                    (void)instance;
                    return false;
                }

                static bool \#(s)_true(void *instance) {
                    (void)instance;
                    return true;
                }

                /* [thread-safe]: reads only the instance's constant state; the event and editor are borrowed. */
                static hh_status_t \#(s)_augment(void *instance, const hh_event_view_t *event, const hh_event_editor_t *editor) {
                    const \#(s)_t *self = instance;
                    hh_value_t existing;
                    if (event->get_attribute(event, self->attribute, &existing) == HH_OK) {
                        return HH_OK; /* the app set it: leave it */
                    }
                    hh_status_t status = editor->set_attribute(editor, self->attribute, &self->value);
                    if (status != HH_OK) {
                        return hh_report(self->host, status, "cannot add '%.*s' to event %.*s", (int)self->attribute.length,
                                         self->attribute.data, (int)event->event_id.length, event->event_id.data);
                    }
                    return HH_OK;
                }

                static const hh_augmentation_v1_t \#(s)_api = {
                    .process_synchronously = \#(s)_false, .is_supplemental_data_ready = \#(s)_true, .augment = \#(s)_augment,
                };

                HH_SINGLE_PLUGIN_LIBRARY("\#(n.id)", "\#(n.id)", "Adds an attribute from its config to every event.", "0.1.0",
                                         HH_KIND_AUGMENTATION, &\#(s)_api, \#(s)_create, \#(s)_destroy);

                """#)
    }

    static func triggerOperator(_ n: Names) -> CPluginTemplate {
        let s = n.symbol
        return CPluginTemplate(
            summary:
                "a trigger operator, `\(n.operatorName)`, true when the event's number is at least the trigger's number (more than it when `inclusive` is false).",
            config: """
                  - key: inclusive
                    type: bool
                    default: true
                    doc: True when equal numbers match too (>=); false for strictly more (>).

                """,
            testConfig: "",
            instanceConfig: "      inclusive: true\n",
            tryIt: "hubhost operators test \(n.operatorName) --type int --trigger 3 --event 5   # true",
            source: header(n, "a trigger operator, \(n.operatorName), true when the event's number is at least the trigger's.")
                + #"""
                #include <stdlib.h>

                typedef struct \#(s) {
                    bool inclusive;
                } \#(s)_t;

                static hh_status_t \#(s)_create(const hh_host_t *host, void **out_instance) {
                    hh_value_t value;
                    \#(s)_t *self = malloc(sizeof *self);
                    if (!self) {
                        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
                    }
                    /* The host filled the default from plugin.yaml; a value of another type counts as the default. */
                    self->inclusive = host->config_get(host, "inclusive", &value) != HH_OK || value.type != HH_VALUE_BOOL ||
                                      value.of.boolean;
                    *out_instance = self;
                    return HH_OK;
                }

                static void \#(s)_destroy(void *instance) {
                    free(instance);
                }

                static bool \#(s)_number(const hh_value_t *value, double *out) {
                    if (value->type == HH_VALUE_INT64) {
                        *out = (double)value->of.int64;
                        return true;
                    }
                    if (value->type == HH_VALUE_DOUBLE) {
                        *out = value->of.real;
                        return true;
                    }
                    return false;
                }

                /* [thread-safe]: reads only immutable state and the borrowed values. */
                static hh_status_t \#(s)_compare(void *instance, const hh_value_t *event_value, const hh_value_t *trigger_value,
                                                 bool *out_result) {
                    const \#(s)_t *self = instance;
                    double event_number, trigger_number;
                    if (!\#(s)_number(event_value, &event_number) || !\#(s)_number(trigger_value, &trigger_number)) {
                        return HH_ERR_TYPE_MISMATCH; /* the host treats it as false */
                    }
                    *out_result = self->inclusive ? event_number >= trigger_number : event_number > trigger_number;
                    return HH_OK;
                }

                static const hh_trigger_operator_v1_t \#(s)_api = {
                    .operator_name = "\#(n.operatorName)", .wire_code = 0, .compare = \#(s)_compare,
                };

                HH_SINGLE_PLUGIN_LIBRARY("\#(n.id)", "\#(n.id)", "True when the event's number is at least the trigger's.", "0.1.0",
                                         HH_KIND_TRIGGER_OPERATOR, &\#(s)_api, \#(s)_create, \#(s)_destroy);

                """#)
    }

    static func logging(_ n: Names) -> CPluginTemplate {
        let s = n.symbol
        return CPluginTemplate(
            summary: "a logging plugin that writes every record the host passes it to stderr, one line each, starting with `prefix`.",
            config: """
                  - key: prefix
                    type: string
                    default: \(n.id)
                    doc: The text each line starts with.

                """,
            testConfig: "",
            instanceConfig: "      prefix: \(n.id)\n",
            tryIt: "hubhost status   # each log record also appears on stderr, starting with \(n.id)",
            source: header(n, "a logging plugin that writes every record to stderr, one line each.")
                + #"""
                #include <stdio.h>
                #include <stdlib.h>

                typedef struct \#(s) {
                    hh_string_t prefix; /* config bytes are host-owned and valid until destroy */
                } \#(s)_t;

                static hh_status_t \#(s)_create(const hh_host_t *host, void **out_instance) {
                    \#(s)_t *self = malloc(sizeof *self);
                    if (!self) {
                        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
                    }
                    self->prefix = hh_config_string(host, "prefix"); /* empty when absent or not a string */
                    *out_instance = self;
                    return HH_OK;
                }

                static void \#(s)_destroy(void *instance) {
                    free(instance);
                }

                static const char *\#(s)_severity(hh_severity_t severity) {
                    switch (severity) {
                    case HH_SEVERITY_CRITICAL_ERROR:
                        return "CRITICAL";
                    case HH_SEVERITY_ERROR:
                        return "ERROR";
                    case HH_SEVERITY_WARNING:
                        return "WARNING";
                    default:
                        return "INFO";
                    }
                }

                /* [host-serialized]: the record is borrowed for the call; must not block for long. */
                static void \#(s)_log(void *instance, const hh_log_record_t *record) {
                    const \#(s)_t *self = instance;
                    fprintf(stderr, "%.*s %s %.*s: %.*s\n", (int)self->prefix.length, self->prefix.data,
                            \#(s)_severity(record->severity), (int)record->source.length, record->source.data,
                            (int)record->message.length, record->message.data);
                }

                static void \#(s)_flush(void *instance) {
                    (void)instance;
                    fflush(stderr);
                }

                static const hh_logging_v1_t \#(s)_api = {
                    .log = \#(s)_log, .flush = \#(s)_flush,
                };

                HH_SINGLE_PLUGIN_LIBRARY("\#(n.id)", "\#(n.id)", "Writes every log record to stderr.", "0.1.0", HH_KIND_LOGGING,
                                         &\#(s)_api, \#(s)_create, \#(s)_destroy);

                """#)
    }

    static func advertiserID(_ n: Names) -> CPluginTemplate {
        let s = n.symbol
        return CPluginTemplate(
            summary:
                "an advertiser-ID delegate that answers the ID in `advertiser_id` (no opinion when it is empty), or no ID at all when `limit_ad_tracking` is true.",
            config: """
                  - key: advertiser_id
                    type: string
                    default: ""
                    doc: The advertiser ID to answer; empty for no opinion (the next delegate is asked).
                  - key: limit_ad_tracking
                    type: bool
                    default: false
                    doc: True to decide that no advertiser ID is used.

                """,
            testConfig: "  advertiser_id: 38400000-8cf0-11bd-b23e-10b96e40000d\n",
            instanceConfig: "      advertiser_id: 38400000-8cf0-11bd-b23e-10b96e40000d\n",
            tryIt: "hubhost advertiser-id   # 38400000-8cf0-11bd-b23e-10b96e40000d",
            source: header(n, "an advertiser-ID delegate that answers the ID in its config.")
                + #"""
                #include <stdlib.h>

                typedef struct \#(s) {
                    hh_string_t advertiser_id; /* config bytes are host-owned and valid until destroy */
                    bool limit_ad_tracking;
                } \#(s)_t;

                static hh_status_t \#(s)_create(const hh_host_t *host, void **out_instance) {
                    hh_value_t value;
                    \#(s)_t *self = malloc(sizeof *self);
                    if (!self) {
                        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
                    }
                    self->advertiser_id = hh_config_string(host, "advertiser_id"); /* empty when absent or not a string */
                    self->limit_ad_tracking = host->config_get(host, "limit_ad_tracking", &value) == HH_OK &&
                                              value.type == HH_VALUE_BOOL && value.of.boolean;
                    *out_instance = self;
                    return HH_OK;
                }

                static void \#(s)_destroy(void *instance) {
                    free(instance);
                }

                /* [thread-safe]: reads only immutable state; the sink copies the bytes at once. */
                static hh_status_t \#(s)_advertiser_id(void *instance, bool *out_limit_ad_tracking, const hh_string_sink_t *id_sink) {
                    const \#(s)_t *self = instance;
                    if (self->limit_ad_tracking) {
                        *out_limit_ad_tracking = true; /* no advertiser ID at all */
                        return HH_OK;
                    }
                    if (self->advertiser_id.length == 0) {
                        return HH_ERR_NOT_FOUND; /* no opinion: the next delegate is asked */
                    }
                    *out_limit_ad_tracking = false;
                    id_sink->set(id_sink->sink_data, self->advertiser_id);
                    return HH_OK;
                }

                static const hh_advertiser_id_v1_t \#(s)_api = {
                    .advertiser_id = \#(s)_advertiser_id,
                };

                HH_SINGLE_PLUGIN_LIBRARY("\#(n.id)", "\#(n.id)", "Answers the advertiser ID in its config.", "0.1.0",
                                         HH_KIND_ADVERTISER_ID, &\#(s)_api, \#(s)_create, \#(s)_destroy);

                """#)
    }

    static func location(_ n: Names) -> CPluginTemplate {
        let s = n.symbol
        return CPluginTemplate(
            summary: "a location delegate that answers the coordinates (and place name) of its config.",
            config: """
                  - key: latitude
                    type: double
                    required: true
                    doc: Degrees north (-90..90).
                  - key: longitude
                    type: double
                    required: true
                    doc: Degrees east (-180..180).
                  - key: name
                    type: string
                    doc: A place name, e.g. "Pike Place Market".

                """,
            testConfig: "  latitude: 47.6097\n  longitude: -122.3422\n  name: Pike Place Market\n",
            instanceConfig: "      latitude: 47.6097\n      longitude: -122.3422\n      name: Pike Place Market\n",
            tryIt: "hubhost location   # 47.6097, -122.3422 (Pike Place Market)",
            source: header(n, "a location delegate that answers the coordinates of its config.")
                + #"""
                #include <stdlib.h>
                #include <string.h>

                typedef struct \#(s) {
                    hh_location_t answer; /* its name points into config memory, valid until destroy */
                } \#(s)_t;

                static bool \#(s)_double(const hh_host_t *host, const char *key, double *out) {
                    hh_value_t value;
                    if (host->config_get(host, key, &value) != HH_OK) {
                        return false;
                    }
                    if (value.type == HH_VALUE_DOUBLE) {
                        *out = value.of.real;
                        return true;
                    }
                    if (value.type == HH_VALUE_INT64) {
                        *out = (double)value.of.int64;
                        return true;
                    }
                    return false;
                }

                static hh_status_t \#(s)_create(const hh_host_t *host, void **out_instance) {
                    hh_location_t answer;
                    memset(&answer, 0, sizeof answer);
                    if (!\#(s)_double(host, "latitude", &answer.latitude) || !\#(s)_double(host, "longitude", &answer.longitude)) {
                        return hh_report(host, HH_ERR_CONFIG, "set 'latitude' and 'longitude' to numbers");
                    }
                    if (!(answer.latitude >= -90.0 && answer.latitude <= 90.0 && answer.longitude >= -180.0 &&
                          answer.longitude <= 180.0)) {
                        return hh_report(host, HH_ERR_CONFIG, "'latitude' must be within -90..90 and 'longitude' within -180..180");
                    }
                    answer.has_coordinates = true;
                    answer.name = hh_config_string(host, "name"); /* empty when absent: no name */
                    \#(s)_t *self = malloc(sizeof *self);
                    if (!self) {
                        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
                    }
                    self->answer = answer;
                    *out_instance = self;
                    return HH_OK;
                }

                static void \#(s)_destroy(void *instance) {
                    free(instance);
                }

                /* [thread-safe]: the answer is immutable after create. */
                static hh_status_t \#(s)_get_location(void *instance, hh_location_t *out) {
                    const \#(s)_t *self = instance;
                    *out = self->answer;
                    return HH_OK;
                }

                static const hh_location_v1_t \#(s)_api = {
                    .get_location = \#(s)_get_location, .release_location = NULL, /* strings live as long as the instance */
                };

                HH_SINGLE_PLUGIN_LIBRARY("\#(n.id)", "\#(n.id)", "Answers the coordinates of its config.", "0.1.0", HH_KIND_LOCATION,
                                         &\#(s)_api, \#(s)_create, \#(s)_destroy);

                """#)
    }
}
