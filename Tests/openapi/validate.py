#!/usr/bin/env python3
"""Checks hubhost's openapi.yaml, and live answers of `hubhost serve` against it.

    validate.py --spec openapi.yaml [--routes FILE] [--exchanges FILE]

--spec             the document: a valid OpenAPI 3.1 document (openapi_spec_validator when it
                   imports, else a structural check), every schema a valid JSON Schema 2020-12
                   schema, every $ref resolvable, every 4xx/5xx response carrying
                   components/schemas/Error as JSON, every operation documenting the request
                   guard's refusals that can reach it (421; 401 under /v1 and /metrics; 403 and
                   413 on POST/PUT/PATCH/DELETE; 415 on those under /v1).
--routes           a JSON file written by Tests/HubHostKitTests/OpenAPITests.swift from the router
                   `hubhost serve` runs (Hummingbird's `Router.routes`): {"routes": [{"method",
                   "path"}]}, a path spelled as Hummingbird prints it (`{id}` a capture, `**` the rest
                   of the path). Every route must be documented, and every operation of the
                   document must have a route of its method that serves its path.
--exchanges        a JSON file written by Tests/HubHostKitTests/OpenAPITests.swift:
                   {"exchanges": [{"method", "path" (the document's template), "target" (the
                   request target sent), "requestContentType", "requestBody", "expectedStatus",
                   "status", "contentType", "headers" (lowercased names), "body"}]}.
                   Each answer must be documented for its route (status, content type, body
                   schema, required headers) and have the status the test expected; every route of
                   the document must have been called, and every route called must be in it.

Prints one line per problem and exits 1 when there is any; exits 0 with a summary otherwise.
Needs PyYAML and jsonschema (`python3 -m pip install pyyaml jsonschema openapi-spec-validator`).
"""

import argparse
import copy
import json
import os
import re
import sys

try:
    import yaml
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError as missing:  # pragma: no cover
    print(f"FAIL: {missing}: install with `python3 -m pip install pyyaml jsonschema openapi-spec-validator`")
    sys.exit(2)

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
STATE_CHANGING = ("post", "put", "delete", "patch")
ERROR_REF = "#/components/schemas/Error"


def common_refusals(path, method):
    """The request guard's answers an operation can get (RequestGuardMiddleware): 421 for a foreign
    Host everywhere; 401 without the bearer token on /v1 (but /v1/health) and /metrics; 403 for a
    foreign Origin and 413 for a body over server.max_body_size on state-changing requests; 415 for
    a body that is not JSON on state-changing /v1 requests."""
    statuses = {"421"}
    if (path.startswith("/v1/") and path != "/v1/health") or path == "/metrics":
        statuses.add("401")
    if method in STATE_CHANGING:
        statuses |= {"403", "413"}
        if path.startswith("/v1/"):
            statuses.add("415")
    return statuses


class Problems:
    def __init__(self):
        self.lines = []

    def add(self, where, message):
        self.lines.append(f"{where}: {message}")


# MARK: The document

def pointer_get(document, pointer):
    """The node a local JSON pointer (`#/a/b~1c`) names."""
    if not pointer.startswith("#"):
        raise KeyError(f"not a local reference: {pointer}")
    node = document
    for part in pointer[1:].split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def resolve(document, node, depth=0):
    """Follows a Reference Object (3.1: `description`/`summary` beside `$ref` override the target's)."""
    if not isinstance(node, dict) or "$ref" not in node or depth > 20:
        return node
    target = copy.copy(resolve(document, pointer_get(document, node["$ref"]), depth + 1))
    if isinstance(target, dict):
        for key in ("description", "summary"):
            if key in node:
                target[key] = node[key]
    return target


def operations(document):
    for path, item in (document.get("paths") or {}).items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def every_ref(node, trail="#"):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield trail, value
            else:
                yield from every_ref(value, f"{trail}/{str(key).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from every_ref(value, f"{trail}/{index}")


def check_document(document, problems, name="openapi.yaml"):
    try:
        from openapi_spec_validator import validate as validate_spec
    except ImportError:
        validate_spec = None
    if validate_spec is not None:
        try:
            validate_spec(document)
        except Exception as error:  # the validator's own exception types vary by version
            text = str(getattr(error, "message", None) or error).split("\n")[0]
            path = "/".join(str(part) for part in getattr(error, "path", []) or [])
            problems.add(name, f"not a valid OpenAPI 3.1 document{f' at {path}' if path else ''}: {text[:300]}")
    else:
        print("note: openapi_spec_validator is not installed; checking the document's structure only")
    # Structure (also what the validator would say, in plainer words).
    if not str(document.get("openapi", "")).startswith("3.1."):
        problems.add(name, f"openapi is '{document.get('openapi')}', expected 3.1.x")
    info = document.get("info") or {}
    for key in ("title", "version"):
        if not isinstance(info.get(key), str):
            problems.add(name, f"info.{key} is missing")
    if not isinstance(document.get("paths"), dict) or not document["paths"]:
        problems.add(name, "no paths")
    for trail, ref in every_ref(document):
        if trail.startswith("#/paths") and "/x-" in trail and not ref.startswith("#"):
            continue
        try:
            pointer_get(document, ref)
        except (KeyError, IndexError, ValueError) as error:
            problems.add(trail, f"$ref '{ref}' does not resolve ({error})")
    # Every schema a valid 2020-12 schema.
    for name, schema in ((document.get("components") or {}).get("schemas") or {}).items():
        try:
            Draft202012Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as error:
            problems.add(f"components/schemas/{name}", f"not a valid JSON Schema 2020-12 schema: {error.message}")
    # The API's rules.
    for path, method, operation in operations(document):
        where = f"{method.upper()} {path}"
        responses = operation.get("responses") or {}
        if not responses:
            problems.add(where, "no responses")
        if not operation.get("operationId"):
            problems.add(where, "no operationId")
        for status, response in responses.items():
            if not str(status)[0] in "45":
                continue
            resolved = resolve(document, response)
            content = (resolved or {}).get("content") or {}
            schema = (content.get("application/json") or {}).get("schema") or {}
            if schema.get("$ref") != ERROR_REF:
                problems.add(f"{where} {status}", f"an error response must carry application/json with $ref {ERROR_REF}")
        for status in sorted(common_refusals(path, method)):
            if status not in responses:
                problems.add(where, f"the request guard can answer {status} here: document it")
        if "401" in common_refusals(path, method) and not any("bearerAuth" in entry for entry in operation.get("security") or []):
            problems.add(where, "can answer 401: name bearerAuth in its security")
        for status, response in responses.items():
            resolved = resolve(document, response)
            for media, body in ((resolved or {}).get("content") or {}).items():
                schema = (body or {}).get("schema")
                if isinstance(schema, dict) and "$ref" not in schema:
                    try:
                        Draft202012Validator.check_schema(schema)
                    except jsonschema.exceptions.SchemaError as error:
                        problems.add(f"{where} {status} {media}", f"not a valid schema: {error.message}")


# MARK: The router's routes

# The routes come from the router `hubhost serve` runs, built in process by OpenAPITests.swift and
# read through Hummingbird's `Router.routes`; their paths are spelled as Hummingbird prints a
# RouterPath: `{id}` a capture, `*` any one segment, `**` the rest of the path (one segment or
# more), `*.jpg`, `file.*`, `{id}.jpg`, `file.{id}` a part of one segment.
PATTERN_PART = re.compile(r"\{[^{}]*\}|\*")


def segments(path):
    return [part for part in path.strip("/").split("/") if part != ""]


def segment_serves(registered, documented):
    """Whether a route's segment serves the document's segment (a literal, or a `{parameter}`
    standing for any value: only a whole-segment capture or `*` serves every value)."""
    if registered == documented or registered == "*" or re.fullmatch(r"\{[^{}]+\}", registered):
        return True
    if documented.startswith("{") or not PATTERN_PART.search(registered):
        return False
    pattern = "".join(".*" if PATTERN_PART.fullmatch(part) else re.escape(part) for part in re.split(r"(\{[^{}]*\}|\*)", registered))
    return re.fullmatch(pattern, documented) is not None


def route_serves(registered, documented):
    """Whether the router's route path `registered` serves requests to the document's path."""
    reg, doc = segments(registered), segments(documented)
    for index, part in enumerate(reg):
        if part == "**":
            return len(doc) > index
        if index >= len(doc) or not segment_serves(part, doc[index]):
            return False
    return len(reg) == len(doc)


def check_routes(routes, document, problems):
    """Both directions: every route of the router is documented, and every operation of the
    document is served by a route of the router with its method."""
    documented = [(path, method) for path, method, _ in operations(document)]
    registered = [(route["method"].lower(), route["path"]) for route in routes]
    if not registered:
        problems.add("--routes", "the router has no routes: was the router built?")
    for method, path in registered:
        if not any(m == method and route_serves(path, p) for p, m in documented):
            problems.add(f"{method.upper()} {path}", "the router registers this route, but openapi.yaml does not document it")
    for path, method in documented:
        if not any(m == method and route_serves(r, path) for m, r in registered):
            problems.add(f"{method.upper()} {path}", "openapi.yaml documents this operation, but the router has no route for it")
    return len(registered)


# MARK: Exchanges

def base_media(content_type):
    return (content_type or "").split(";")[0].strip().lower()


def pick_media(content, actual):
    """The documented media type that covers `actual` (exact, then type/*, then */*)."""
    if actual in content:
        return actual
    major = actual.split("/")[0] + "/*"
    if major in content:
        return major
    if "*/*" in content:
        return "*/*"
    return None


def schema_validator(document, schema):
    """A validator for `schema`, in the document's scope so that `#/components/...` resolves."""
    root = {key: value for key, value in document.items() if key not in ("allOf", "$ref", "$schema", "$id")}
    root["allOf"] = [schema]
    return Draft202012Validator(root, format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_errors(document, schema, instance, limit=5):
    errors = sorted(schema_validator(document, schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
    lines = []
    for error in errors[:limit]:
        location = "/".join(str(part) for part in error.absolute_path) or "(the body)"
        detail = error.message
        if error.context:
            detail += " [" + "; ".join(sub.message for sub in error.context[:3]) + "]"
        lines.append(f"{location}: {detail[:400]}")
    return lines


def parse_body(media, text):
    if media == "application/json" or media.endswith("+json"):
        return json.loads(text)
    if media in ("application/yaml", "application/x-yaml", "text/yaml"):
        return yaml.safe_load(text)
    return text


def server_sent_events(text):
    """The complete events of a (possibly cut) event stream: (event name, data text) pairs."""
    events = []
    blocks = text.replace("\r\n", "\n").split("\n\n")
    for block in blocks[:-1]:  # the last block may be cut
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        if data:
            events.append((name, "\n".join(data)))
    return events


def path_matches(template, target):
    path = target.split("?")[0]
    pattern = "^" + re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(template)) + "$"
    return re.match(pattern, path) is not None


def check_exchange(document, exchange, problems):
    method = exchange["method"].lower()
    template = exchange["path"]
    status = int(exchange.get("status") or 0)
    where = f"{exchange['method']} {exchange.get('target', template)} -> {status}"
    expected = exchange.get("expectedStatus")
    if status == 0:
        problems.add(where, f"no answer ({exchange.get('body', '')[:200]})")
        return
    if expected is not None and int(expected) != status:
        problems.add(where, f"expected status {expected}, got {status}: {exchange.get('body', '')[:300]!r}")
    operation = ((document.get("paths") or {}).get(template) or {}).get(method)
    if operation is None:
        problems.add(where, f"{exchange['method']} {template} is not in openapi.yaml")
        return
    if not path_matches(template, exchange.get("target", template)):
        problems.add(where, f"the target does not match the template {template} (a test bug)")
    responses = operation.get("responses") or {}
    response = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or responses.get("default")
    if response is None:
        problems.add(where, f"status {status} is not documented for {exchange['method']} {template} "
                            f"(documented: {', '.join(sorted(responses))}); body: {exchange.get('body', '')[:300]!r}")
        return
    response = resolve(document, response)
    headers = {k.lower(): v for k, v in (exchange.get("headers") or {}).items()}
    for name, header in (response.get("headers") or {}).items():
        header = resolve(document, header)
        value = headers.get(name.lower())
        if value is None:
            if header.get("required"):
                problems.add(where, f"the required header {name} is missing")
            continue
        if isinstance(header.get("schema"), dict):
            for line in schema_errors(document, header["schema"], value):
                problems.add(where, f"header {name}: {line}")
    content = response.get("content") or {}
    body = exchange.get("body") or ""
    actual = base_media(exchange.get("contentType"))
    if not content:
        if body:
            problems.add(where, f"a body ({actual or 'no content type'}) where the document says none: {body[:200]!r}")
        return
    if not body and not exchange.get("bodyTruncated"):
        problems.add(where, f"an empty body where the document says {', '.join(content)}")
        return
    media = pick_media(content, actual)
    if media is None:
        problems.add(where, f"content type '{exchange.get('contentType')}' is not documented for {status} "
                            f"(documented: {', '.join(content)}); body: {body[:300]!r}")
        return
    media_object = content[media] or {}
    schema = media_object.get("schema")
    if media == "text/event-stream":
        data_schema = media_object.get("x-event-data")
        events = server_sent_events(body)
        if not events:
            problems.add(where, f"no complete event with data in the stream: {body[:300]!r}")
        for name, data in events:
            try:
                value = json.loads(data)
            except ValueError as error:
                problems.add(where, f"event {name}: data is not JSON ({error}): {data[:200]!r}")
                continue
            if isinstance(data_schema, dict):
                for line in schema_errors(document, data_schema, value):
                    problems.add(where, f"event {name}: {line}")
            if isinstance(value, dict) and name is not None and value.get("name") != name:
                problems.add(where, f"event {name}: its data names '{value.get('name')}'")
        return
    try:
        instance = parse_body(actual if media.endswith("*") else media, body)
    except ValueError as error:
        problems.add(where, f"the body is not {media}: {error}: {body[:200]!r}")
        return
    if isinstance(schema, dict):
        for line in schema_errors(document, schema, instance):
            problems.add(where, f"{media} {line}; body: {body[:300]!r}")


def check_request(document, exchange, problems):
    """A successful call's request must be one the document describes (else the test is wrong)."""
    expected = exchange.get("expectedStatus")
    if expected is None or not 200 <= int(expected) < 300 or not exchange.get("requestBody"):
        return
    operation = ((document.get("paths") or {}).get(exchange["path"]) or {}).get(exchange["method"].lower())
    if operation is None:
        return
    where = f"{exchange['method']} {exchange.get('target')} (request)"
    request_body = resolve(document, operation.get("requestBody"))
    if not request_body:
        problems.add(where, "sends a body, but the document describes none")
        return
    content = request_body.get("content") or {}
    media = pick_media(content, base_media(exchange.get("requestContentType")))
    if media is None:
        problems.add(where, f"content type '{exchange.get('requestContentType')}' is not one the document accepts ({', '.join(content)})")
        return
    try:
        instance = json.loads(exchange["requestBody"])
    except ValueError:
        return
    schema = (content[media] or {}).get("schema")
    if isinstance(schema, dict):
        for line in schema_errors(document, schema, instance):
            problems.add(where, f"the test's request does not match the document: {line}")


def check_exchanges(document, exchanges, problems):
    called = set()
    for exchange in exchanges:
        called.add((exchange["path"], exchange["method"].lower()))
        check_exchange(document, exchange, problems)
        check_request(document, exchange, problems)
    for path, method, _ in operations(document):
        if (path, method) not in called:
            problems.add(f"{method.upper()} {path}", "in openapi.yaml, but the test never called it")
    return called


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--routes")
    parser.add_argument("--exchanges")
    arguments = parser.parse_args()

    problems = Problems()
    try:
        with open(arguments.spec, encoding="utf-8") as file:
            document = yaml.safe_load(file)
    except (OSError, yaml.YAMLError) as error:
        print(f"FAIL: {arguments.spec}: cannot read the document: {error}")
        return 1
    check_document(document, problems, os.path.basename(arguments.spec))
    summary = [f"{sum(1 for _ in operations(document))} operations in {len(document.get('paths') or {})} paths"]
    if arguments.routes:
        with open(arguments.routes, encoding="utf-8") as file:
            found = check_routes(json.load(file)["routes"], document, problems)
        summary.append(f"{found} routes of the router")
    if arguments.exchanges:
        with open(arguments.exchanges, encoding="utf-8") as file:
            exchanges = json.load(file)["exchanges"]
        called = check_exchanges(document, exchanges, problems)
        summary.append(f"{len(exchanges)} exchanges over {len(called)} routes")
    for line in problems.lines:
        print(f"FAIL: {line}")
    if problems.lines:
        print(f"{len(problems.lines)} problem(s); " + ", ".join(summary))
        return 1
    print("ok: " + ", ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
