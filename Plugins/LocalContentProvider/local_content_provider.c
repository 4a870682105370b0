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

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_SIZE 4096
#define CHUNK_SIZE (256 * 1024)

typedef struct local_provider {
    const hh_host_t *host;
    char path[PATH_SIZE];
} local_provider_t;

static void report(const hh_host_t *host, hh_status_t status, const char *message) {
    host->report_error(host, status, hh_string_from_cstr(message));
}

static hh_status_t local_provider_create(const hh_host_t *host, void **out_instance) {
    hh_value_t value;
    if (host->config_get(host, "path", &value) != HH_OK || value.type != HH_VALUE_STRING || value.of.string.length == 0) {
        report(host, HH_ERR_CONFIG, "'path' is required: a folder with bundle.sqlite3 and bundle.sqlite3.json, or a bundle file");
        return HH_ERR_CONFIG;
    }
    if (value.of.string.length >= PATH_SIZE - 64) {
        report(host, HH_ERR_CONFIG, "'path' is too long");
        return HH_ERR_CONFIG;
    }
    local_provider_t *self = calloc(1, sizeof *self);
    if (!self) {
        report(host, HH_ERR_INTERNAL, "out of memory");
        return HH_ERR_INTERNAL;
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
        if (slash) *slash = '\0'; else snprintf(directory, sizeof directory, ".");
    }
    if (strcmp(name, HH_CONTENT_RESOURCE_SETTINGS) == 0) {
        snprintf(out, size, "%s/settings.json", directory);
    } else if (strcmp(name, HH_CONTENT_RESOURCE_METADATA) == 0) {
        if (folder) snprintf(out, size, "%s/bundle.sqlite3.json", self->path);
        else snprintf(out, size, "%s.json", self->path);
    } else if (strcmp(name, HH_CONTENT_RESOURCE_BUNDLE) == 0) {
        if (folder) snprintf(out, size, "%s/bundle.sqlite3", self->path);
        else snprintf(out, size, "%s", self->path);
    } else {
        return false;
    }
    return true;
}

static hh_status_t local_provider_fetch(void *instance, const char *resource, const hh_content_sink_t *sink) {
    local_provider_t *self = instance;
    if (!resource || !sink || !sink->write) return HH_ERR_INVALID_ARGUMENT;
    char name[32];
    size_t length = strcspn(resource, "?");
    char file[PATH_SIZE + 64];
    if (length >= sizeof name) length = sizeof name - 1;
    memcpy(name, resource, length);
    name[length] = '\0';
    struct stat where;
    if (stat(self->path, &where) != 0) {
        char message[PATH_SIZE + 160];
        snprintf(message, sizeof message, "%s: no such folder or bundle file (the 'path' config: a folder with bundle.sqlite3 and bundle.sqlite3.json, or a bundle file)", self->path);
        report(self->host, HH_ERR_NOT_FOUND, message);
        return HH_ERR_NOT_FOUND;
    }
    if (!file_for(self, name, file, sizeof file)) {
        char message[128];
        snprintf(message, sizeof message, "unknown resource '%s': expected settings, metadata or bundle", name);
        report(self->host, HH_ERR_NOT_FOUND, message);
        return HH_ERR_NOT_FOUND;
    }
    FILE *input = fopen(file, "rb");
    if (!input) {
        char message[PATH_SIZE + 128];
        hh_status_t status = errno == ENOENT ? HH_ERR_NOT_FOUND : HH_ERR_IO;
        snprintf(message, sizeof message, "%s: %s", file, strerror(errno));
        report(self->host, status, message);
        return status;
    }
    struct stat info;
    uint64_t total = fstat(fileno(input), &info) == 0 && S_ISREG(info.st_mode) ? (uint64_t)info.st_size : 0;
    unsigned char *buffer = malloc(CHUNK_SIZE);
    if (!buffer) {
        fclose(input);
        report(self->host, HH_ERR_INTERNAL, "out of memory");
        return HH_ERR_INTERNAL;
    }
    hh_status_t status = HH_OK;
    uint64_t done = 0;
    for (;;) {
        if (sink->is_cancelled && sink->is_cancelled(sink)) {
            report(self->host, HH_ERR_UNAVAILABLE, "the host cancelled the read");
            status = HH_ERR_UNAVAILABLE;
            break;
        }
        size_t n = fread(buffer, 1, CHUNK_SIZE, input);
        if (n > 0) {
            status = sink->write(sink, buffer, n);
            if (status != HH_OK) break;
            done += n;
            if (sink->progress) sink->progress(sink, done, total > done ? total : done);
        }
        if (n < CHUNK_SIZE) {
            if (ferror(input)) {
                char message[PATH_SIZE + 128];
                snprintf(message, sizeof message, "%s: read failed", file);
                report(self->host, HH_ERR_IO, message);
                status = HH_ERR_IO;
            }
            break;
        }
    }
    if (status == HH_OK && done == 0 && sink->progress) sink->progress(sink, 0, 0);
    free(buffer);
    fclose(input);
    return status;
}

static const hh_content_provider_v1_t local_provider_api = {
    .fetch = local_provider_fetch,
};

static const hh_plugin_descriptor_t local_provider_descriptor = {
    .id = "local-content-provider",
    .name = "Local content provider",
    .description = "Reads the Content Hub's settings, metadata and bundle from a local folder or bundle file (for content authors).",
    .version = "1.0.0",
    .kind = HH_KIND_CONTENT_PROVIDER,
    .kind_api = &local_provider_api,
    .create = local_provider_create,
    .destroy = local_provider_destroy,
    .get_extension = NULL,
};

static const hh_plugin_descriptor_t *local_provider_get_plugin(uint32_t index) {
    return index == 0 ? &local_provider_descriptor : NULL;
}

static const hh_library_t local_provider_library = {
    .abi_version = HH_ABI_VERSION_INIT,
    .init = NULL,
    .deinit = NULL,
    .plugin_count = 1,
    .get_plugin = local_provider_get_plugin,
};

HH_EXPORT const hh_library_t *hubhost_library_entry(void) {
    return &local_provider_library;
}
