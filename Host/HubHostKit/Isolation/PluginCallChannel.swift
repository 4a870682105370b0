/// Where an isolated call goes: a worker process (`isolation: process`) or a WebAssembly guest.
/// Both take the request in the isolation protocol's encoding and answer in it, so IsolatedCalls'
/// host side serves every kind for both.
protocol PluginCallChannel: AnyObject {
    func call(_ index: Int, _ op: WorkerOp, _ arguments: (inout WireWriter) -> Void) -> Result<WireReader, WorkerFailure>
}

extension PluginWorker: PluginCallChannel {}

extension WasmPluginInstance: PluginCallChannel {}
