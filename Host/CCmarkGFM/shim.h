/* cmark-gfm from libcmark-gfm-dev and libcmark-gfm-extensions-dev: the CommonMark parser and HTML
 * renderer for Markdown articles, GitHub's extensions (tables, strikethrough, autolinks, task
 * lists), and its HTML5 entity decoder (houdini) for the HTML article sanitiser. */
#include <cmark-gfm.h>
#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm/houdini.h>
