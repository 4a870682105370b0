/*
 * Test-only plugins that misbehave on purpose, one fault per build (choose with -DFAULT_<NAME>):
 *
 *   FAULT_SEGFAULT        write through a NULL pointer
 *   FAULT_ABORT           call abort()
 *   FAULT_HANG            loop forever
 *   FAULT_ALLOC           allocate (and touch) memory without bound
 *   FAULT_GARBAGE_STATUS  return a status no header defines (12345)
 *   FAULT_OVERFLOW        write 1 MiB past a 16-byte stack buffer
 *   FAULT_WRONG_ABI       claim ABI major version 7
 *   FAULT_LEAK            create allocates and destroy does not free (for --leaks)
 *   FAULT_CRASH_ON_LOAD   segfault in a library constructor, as dlopen runs it
 *   FAULT_CRASH_ONCE      segfault on the first call when the file named by the environment
 *                         variable FAULTY_CRASH_MARKER does not exist yet (creating it first):
 *                         a worker that crashes once and then behaves
 *   FAULT_HANG_ONCE       loop forever on the first call, as FAULT_CRASH_ONCE crashes
 *   FAULT_SLOW            sleep FAULTY_SLOW_MS milliseconds (environment; default 200) in every call
 *   FAULT_BIG_ANSWER      the augmentation also sets "Big" to a string of 1 MiB
 *   FAULT_REPORT_ENV      the augmentation also sets "Token" to the environment variable
 *                         HUBHOST_TOKEN and "Slow" to FAULTY_SLOW_MS ("(unset)" when absent)
 *   FAULT_FORGE_LOG       write a log frame of its own on the worker's socket (fd 3) claiming the
 *                         source "hubhost.loader" and the year 2001, then segfault
 *   FAULT_FORK_THEN_CRASH fork a child that sleeps a minute holding every descriptor, write its
 *                         pid to the file FAULTY_CRASH_MARKER names, then segfault
 *
 *   FAULT_CREATE_FAILS    create returns HH_ERR_INTERNAL (a version that does not start)
 *
 * FIXTURE_VALUE (a C string, default "augmented") is the value the augmentation sets, so that two
 * builds of one plugin (two versions) can be told apart in the events they augment;
 * FIXTURE_VERSION (default "1.0.0") is the version both plugins declare.
 *
 * The fault fires in every kind call (augment, compare, log), never in create, so the host sees it
 * while handling events. Without a FAULT_ define both plugins behave: the augmentation adds
 * "Fixture" = "augmented", the operator answers whether two int64 values are equal.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, fork, under -std=c11 */

#include <hubhost/hubhost.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef FIXTURE_VALUE
#define FIXTURE_VALUE "augmented"
#endif
#ifndef FIXTURE_VERSION
#define FIXTURE_VERSION "1.0.0"
#endif

#ifdef FAULT_WRONG_ABI
#define FIXTURE_ABI_MAJOR 7
#else
#define FIXTURE_ABI_MAJOR HH_ABI_VERSION_MAJOR
#endif

#ifdef FAULT_CRASH_ON_LOAD
__attribute__((constructor)) static void crash_on_load(void) {
    volatile int *nowhere = NULL;
    *nowhere = 7;
}
#endif

#if defined(FAULT_CRASH_ONCE) || defined(FAULT_HANG_ONCE)
/* True the first time in any process: when the file FAULTY_CRASH_MARKER names does not exist yet
 * (it is created now). False without the variable. */
static int first_time(void) {
    const char *marker = getenv("FAULTY_CRASH_MARKER");
    if (!marker) {
        return 0;
    }
    FILE *seen = fopen(marker, "r");
    if (seen) {
        fclose(seen);
        return 0;
    }
    FILE *created = fopen(marker, "w");
    if (created) {
        fclose(created);
    }
    return 1;
}
#endif

/* Returns HH_OK when the call should go on normally; otherwise misbehaves (or never returns). */
static hh_status_t misbehave(void) {
#if defined(FAULT_SEGFAULT)
    volatile int *nowhere = NULL;
    *nowhere = 42;
#elif defined(FAULT_ABORT)
    abort();
#elif defined(FAULT_HANG)
    volatile unsigned long spin = 0;
    for (;;) {
        spin++;
    }
#elif defined(FAULT_ALLOC)
    for (;;) {
        char *block = malloc(64u << 20);
        memset(block, 1, 64u << 20); /* like careless code: no NULL check, so it dies when memory runs out */
    }
#elif defined(FAULT_GARBAGE_STATUS)
    return 12345;
#elif defined(FAULT_CRASH_ONCE)
    if (first_time()) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
    }
#elif defined(FAULT_HANG_ONCE)
    if (first_time()) {
        volatile unsigned long spin = 0;
        for (;;) {
            spin++;
        }
    }
#elif defined(FAULT_FORGE_LOG)
    /* The isolation protocol's frame: u32 length, then 0x83 (log), i32 severity, i32 verbosity,
     * i64 time (ms), and two u32-length strings, the source and the message; all little-endian. */
    static const char source[] = "hubhost.loader", message[] = "forged by the plugin";
    unsigned char frame[256];
    size_t at = 4;
    uint32_t u;
    int64_t when = 978307200000LL; /* 2001-01-01 */
    frame[at++] = 0x83;
    u = 1;
    memcpy(frame + at, &u, 4);
    at += 4; /* critical_error */
    u = 1;
    memcpy(frame + at, &u, 4);
    at += 4; /* debug */
    memcpy(frame + at, &when, 8);
    at += 8;
    u = sizeof source - 1;
    memcpy(frame + at, &u, 4);
    at += 4;
    memcpy(frame + at, source, sizeof source - 1);
    at += sizeof source - 1;
    u = sizeof message - 1;
    memcpy(frame + at, &u, 4);
    at += 4;
    memcpy(frame + at, message, sizeof message - 1);
    at += sizeof message - 1;
    u = (uint32_t)(at - 4);
    memcpy(frame, &u, 4);
    if (write(3, frame, at) != (ssize_t)at) {
        return HH_ERR_IO;
    }
    volatile int *nowhere = NULL;
    *nowhere = 5;
#elif defined(FAULT_FORK_THEN_CRASH)
    pid_t child = fork();
    if (child == 0) {
        sleep(60);
        _exit(0);
    }
    const char *marker = getenv("FAULTY_CRASH_MARKER");
    FILE *out = marker ? fopen(marker, "w") : NULL;
    if (out) {
        fprintf(out, "%ld\n", (long)child);
        fclose(out);
    }
    volatile int *nowhere = NULL;
    *nowhere = 3;
#elif defined(FAULT_SLOW)
    const char *ms = getenv("FAULTY_SLOW_MS");
    long delay = ms ? atol(ms) : 200;
    struct timespec pause = {delay / 1000, (delay % 1000) * 1000000L};
    nanosleep(&pause, NULL);
#elif defined(FAULT_OVERFLOW)
    char small[16];
    volatile size_t n = 1u << 20;
    memset(small, 'x', n);
    return small[0] == 'x' ? HH_OK : HH_ERR_INTERNAL;
#endif
    return HH_OK;
}

static hh_status_t fixture_create(const hh_host_t *host, void **out_instance) {
#ifdef FAULT_CREATE_FAILS
    *out_instance = NULL;
    host->log(host, HH_SEVERITY_ERROR, HH_VERBOSITY_DEBUG,
              hh_string_from_cstr("faulty fixture refuses to start"));
    return HH_ERR_INTERNAL;
#endif
#ifdef FAULT_LEAK
    *out_instance = malloc(4096);
#else
    *out_instance = NULL;
#endif
    host->log(host, HH_SEVERITY_INFO, HH_VERBOSITY_DEBUG, hh_string_from_cstr("faulty fixture created"));
    return HH_OK;
}

static void fixture_destroy(void *instance) {
#ifndef FAULT_LEAK
    free(instance);
#else
    (void)instance;
#endif
}

static bool fixture_false(void *instance) {
    (void)instance;
    return false;
}

static bool fixture_true(void *instance) {
    (void)instance;
    return true;
}

static hh_status_t fixture_augment(void *instance, const hh_event_view_t *event,
                                   const hh_event_editor_t *editor) {
    (void)instance;
    (void)event;
    hh_status_t status = misbehave();
    if (status != HH_OK) {
        return status;
    }
    hh_value_t value;
    value.type = HH_VALUE_STRING;
    value.of.string = hh_string_from_cstr(FIXTURE_VALUE);
#ifdef FAULT_BIG_ANSWER
    static char big[1u << 20];
    memset(big, 'b', sizeof big);
    hh_value_t large;
    large.type = HH_VALUE_STRING;
    large.of.string.data = big;
    large.of.string.length = sizeof big;
    status = editor->set_attribute(editor, hh_string_from_cstr("Big"), &large);
    if (status != HH_OK) {
        return status;
    }
#endif
#ifdef FAULT_REPORT_ENV
    const char *names[2][2] = {{"Token", "HUBHOST_TOKEN"}, {"Slow", "FAULTY_SLOW_MS"}};
    for (int i = 0; i < 2; i++) {
        const char *found = getenv(names[i][1]);
        hh_value_t reported;
        reported.type = HH_VALUE_STRING;
        reported.of.string = hh_string_from_cstr(found ? found : "(unset)");
        status = editor->set_attribute(editor, hh_string_from_cstr(names[i][0]), &reported);
        if (status != HH_OK) {
            return status;
        }
    }
#endif
    return editor->set_attribute(editor, hh_string_from_cstr("Fixture"), &value);
}

static hh_status_t fixture_compare(void *instance, const hh_value_t *event_value,
                                   const hh_value_t *trigger_value, bool *out_result) {
    (void)instance;
    hh_status_t status = misbehave();
    if (status != HH_OK) {
        return status;
    }
    if (event_value->type != HH_VALUE_INT64 || trigger_value->type != HH_VALUE_INT64) {
        return HH_ERR_TYPE_MISMATCH;
    }
    *out_result = event_value->of.int64 == trigger_value->of.int64;
    return HH_OK;
}

static const hh_augmentation_v1_t augmentation_api = {
    .process_synchronously = fixture_false,
    .is_supplemental_data_ready = fixture_true,
    .augment = fixture_augment,
};

static const hh_trigger_operator_v1_t operator_api = {
    .operator_name = "FAULTY_EQUALS",
    .wire_code = 0,
    .compare = fixture_compare,
};

static const hh_plugin_descriptor_t descriptors[] = {
    {
        .id = "faulty-augmentation",
        .name = "Faulty augmentation",
        .description = "Misbehaves as built.",
        .version = FIXTURE_VERSION,
        .kind = HH_KIND_AUGMENTATION,
        .kind_api = &augmentation_api,
        .create = fixture_create,
        .destroy = fixture_destroy,
        .get_extension = NULL,
    },
    {
        .id = "faulty-operator",
        .name = "Faulty operator",
        .description = "Misbehaves as built.",
        .version = FIXTURE_VERSION,
        .kind = HH_KIND_TRIGGER_OPERATOR,
        .kind_api = &operator_api,
        .create = fixture_create,
        .destroy = fixture_destroy,
        .get_extension = NULL,
    },
};

static const hh_plugin_descriptor_t *fixture_get_plugin(uint32_t index) {
    return index < 2 ? &descriptors[index] : NULL;
}

static const hh_library_t fixture_library = {
    .abi_version = {FIXTURE_ABI_MAJOR, 0, 0},
    .init = NULL,
    .deinit = NULL,
    .plugin_count = 2,
    .get_plugin = fixture_get_plugin,
};

HH_EXPORT const hh_library_t *hubhost_library_entry(void) {
    return &fixture_library;
}
