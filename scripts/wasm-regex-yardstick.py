"""`hubhost bench wasm`'s yardstick: MATCHES_REGEX of (ab)*c$ over 10,000 bytes in the .wasm build
of Plugins/StandardOperators, run by wasmtime (PyPI `wasmtime`, a Cranelift JIT) instead of WasmKit.
The host imports answer as hubhost's do for this call (no config, no log); prints one line, the
best of 3 rounds of 100 calls in microseconds.

    python3 scripts/wasm-regex-yardstick.py standard-operators.wasm
"""
import struct, sys, time
import wasmtime

path = sys.argv[1]
engine = wasmtime.Engine()
store = wasmtime.Store(engine)
module = wasmtime.Module.from_file(engine, path)
linker = wasmtime.Linker(engine)
i32, i64 = wasmtime.ValType.i32(), wasmtime.ValType.i64()
def define(mod, name, params, results, fn):
    linker.define_func(mod, name, wasmtime.FuncType(params, results), fn)
define("hubhost", "log", [i32]*4, [], lambda *a: None)
define("hubhost", "report_error", [i32]*3, [], lambda *a: None)
define("hubhost", "monotonic_ns", [], [i64], lambda: time.monotonic_ns())
define("hubhost", "config_get", [i32]*4, [i32], lambda *a: -1)
define("hubhost", "http_fetch", [i32]*3, [i32], lambda *a: 3)  # HH_ERR_UNSUPPORTED: no host is allowed
define("hubhost", "http_take", [i32]*2, [i32], lambda *a: -1)
for imp in module.imports:
    if imp.module == "wasi_snapshot_preview1":
        t = imp.type
        define(imp.module, imp.name, list(t.params), list(t.results), lambda *a: 52)
inst = linker.instantiate(store, module)
ex = inst.exports(store)
memory = ex["memory"]
if "_initialize" in ex: ex["_initialize"](store)
describe = ex["hh_wasm_describe"](store)
# descriptors: find the index of matches-regex
data = bytes(memory.read(store, describe & 0xffffffff, (describe & 0xffffffff) + (describe >> 32)))
off = 12; count = struct.unpack_from("<I", data, off)[0]; off += 4; index = None
for i in range(count):
    fields = []
    for _ in range(4):
        n = struct.unpack_from("<I", data, off)[0]; fields.append(data[off+4:off+4+n].decode()); off += 4 + n
    off += 4
    if fields[0] == "matches-regex": index = i
assert ex["hh_wasm_create"](store, index) == 0
text = b"ab" * 5000; pattern = b"(ab)*c$"
request = b"\x01" + struct.pack("<I", len(text)) + text + b"\x01" + struct.pack("<I", len(pattern)) + pattern
buf = ex["hh_wasm_buffer"](store, len(request))
memory.write(store, request, buf)
call = ex["hh_wasm_call"]
best = float("inf")
for _ in range(3):
    start = time.perf_counter_ns()
    for _ in range(100):
        memory.write(store, request, buf)
        answer = call(store, index, 5, len(request))
    best = min(best, (time.perf_counter_ns() - start) / 100)
out = bytes(memory.read(store, answer & 0xffffffff, (answer & 0xffffffff) + 9))
assert out[0] == 0 and struct.unpack_from("<i", out, 1)[0] == 0, out
print(f"{best / 1000:.1f}")
