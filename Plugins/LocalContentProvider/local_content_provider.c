/*
 * local-content-provider: a content_provider for content authors, in C. It reads the Content Hub's
 * resources from the file system instead of a content service. `path` is either
 *
 *   - a folder holding bundle.sqlite3, its metadata document bundle.sqlite3.json and optionally
 *     settings.json (the delivery settings document), or
 *   - a bundle file, with its metadata document beside it (<file>.json) and optionally a
 *     settings.json in the same folder.
 *
 * Resources: settings, metadata, bundle; a query string on the name ("settings?location_id=...")
 * is ignored. Files are streamed in chunks with progress. A missing file is HH_ERR_NOT_FOUND (for
 * settings the host then uses the default delivery settings).
 */
#define _POSIX_C_SOURCE 200809L
#include <hubhost/hubhost.h>
#include <hubhost/hubhost_plugin_helpers.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_SIZE  4096
#define CHUNK_SIZE (256 * 1024)

typedef struct local_provider {
    const hh_host_t *host;
    char path[PATH_SIZE];
} local_provider_t;

static hh_status_t local_provider_create(const hh_host_t *host, void **out_instance) {
    hh_value_t value;
    if (host->config_get(host, "path", &value) != HH_OK || value.type != HH_VALUE_STRING ||
        value.of.string.length == 0) {
        return hh_report(
            host, HH_ERR_CONFIG,
            "'path' is required: a folder with bundle.sqlite3 and bundle.sqlite3.json, or a bundle file");
    }
    if (value.of.string.length >= PATH_SIZE - 64) {
        return hh_report(host, HH_ERR_CONFIG, "'path' is too long (%zu bytes, at most %d)",
                         value.of.string.length, PATH_SIZE - 65);
    }
    local_provider_t *self = calloc(1, sizeof *self);
    if (!self) {
        return hh_report(host, HH_ERR_INTERNAL, "out of memory");
    }
    self->host = host;
    memcpy(self->path, value.of.string.data, value.of.string.length);
    self->path[value.of.string.length] = '\0';
    *out_instance = self;
    return HH_OK;
}

static void local_provider_destroy(void *instance) {
    free(instance);
}

/* The file that holds `name` (settings, metadata or bundle); false for an unknown name. */
static bool file_for(const local_provider_t *self, const char *name, char *out, size_t size) {
    struct stat info;
    bool folder = stat(self->path, &info) == 0 && S_ISDIR(info.st_mode);
    char directory[PATH_SIZE];
    if (folder) {
        snprintf(directory, sizeof directory, "%s", self->path);
    } else {
        snprintf(directory, sizeof directory, "%s", self->path);
        char *slash = strrchr(directory, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(directory, sizeof directory, ".");
    }
    if (strcmp(name, HH_CONTENT_RESOURCE_SETTINGS) == 0) {
        snprintf(out, size, "%s/settings.json", directory);
    } else if (strcmp(name, HH_CONTENT_RESOURCE_METADATA) == 0) {
        if (folder)
            snprintf(out, size, "%s/bundle.sqlite3.json", self->path);
        else
            snprintf(out, size, "%s.json", self->path);
    } else if (strcmp(name, HH_CONTENT_RESOURCE_BUNDLE) == 0) {
        if (folder)
            snprintf(out, size, "%s/bundle.sqlite3", self->path);
        else
            snprintf(out, size, "%s", self->path);
    } else {
        return false;
    }
    return true;
}

static hh_status_t local_provider_fetch(void *instance, const char *resource, const hh_content_sink_t *sink) {
    local_provider_t *self = instance;
    if (!resource || !sink || !sink->write)
        return HH_ERR_INVALID_ARGUMENT;
    char name[32];
    size_t length = strcspn(resource, "?");
    char file[PATH_SIZE + 64];
    if (length >= sizeof name)
        length = sizeof name - 1;
    memcpy(name, resource, length);
    name[length] = '\0';
    struct stat where;
    if (stat(self->path, &where) != 0) {
        return hh_report(self->host, HH_ERR_NOT_FOUND,
                         "%s: no such folder or bundle file (the 'path' config: a folder with bundle.sqlite3 "
                         "and bundle.sqlite3.json, "
                         "or a bundle file)",
                         self->path);
    }
    if (!file_for(self, name, file, sizeof file)) {
        return hh_report(self->host, HH_ERR_NOT_FOUND,
                         "unknown resource '%s': expected settings, metadata or bundle", name);
    }
    FILE *input = fopen(file, "rb");
    if (!input) {
        int error = errno;
        return hh_report(self->host, error == ENOENT ? HH_ERR_NOT_FOUND : HH_ERR_IO, "%s: %s", file,
                         strerror(error));
    }
    struct stat info;
    uint64_t total = fstat(fileno(input), &info) == 0 && S_ISREG(info.st_mode) ? (uint64_t)info.st_size : 0;
    unsigned char *buffer = malloc(CHUNK_SIZE);
    if (!buffer) {
        fclose(input);
        return hh_report(self->host, HH_ERR_INTERNAL, "out of memory");
    }
    hh_status_t status = HH_OK;
    uint64_t done = 0;
    for (;;) {
        if (sink->is_cancelled && sink->is_cancelled(sink)) {
            status = hh_report(self->host, HH_ERR_UNAVAILABLE, "the host cancelled the read");
            break;
        }
        size_t n = fread(buffer, 1, CHUNK_SIZE, input);
        if (n > 0) {
            status = sink->write(sink, buffer, n);
            if (status != HH_OK)
                break;
            done += n;
            if (sink->progress)
                sink->progress(sink, done, total > done ? total : done);
        }
        if (n < CHUNK_SIZE) {
            if (ferror(input)) {
                status = hh_report(self->host, HH_ERR_IO, "%s: read failed", file);
            }
            break;
        }
    }
    if (status == HH_OK && done == 0 && sink->progress)
        sink->progress(sink, 0, 0);
    free(buffer);
    fclose(input);
    return status;
}

static const hh_content_provider_v1_t local_provider_api = {
    .fetch = local_provider_fetch,
};

HH_SINGLE_PLUGIN_LIBRARY("local-content-provider", "Local content provider",
                         "Reads the Content Hub's settings, metadata and bundle from a local folder or "
                         "bundle file (for content authors).",
                         "1.0.0", HH_KIND_CONTENT_PROVIDER, &local_provider_api, local_provider_create,
                         local_provider_destroy);
