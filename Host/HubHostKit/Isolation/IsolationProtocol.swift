/// Frame types of the process-isolation protocol (`isolation: process`).
///
/// The host and one worker child speak over a socketpair (the worker's fd 3). Every frame is
/// `[u32 length, little-endian][u8 type][body]`:
///
///   host -> worker   hello     instance id, plugin.yaml path, library path, data directory,
///                               log severity and verbosity, config (count, then key and value each),
///                               HTTP policy (count of allowed hosts, each host, timeout seconds f64),
///                               capacity u32 of the shared call slot on the worker's fd 4 (0: none)
///                    call      request id u32, plugin index u32, op u8 (WorkerOp), arguments
///                    shutdown  (no body): destroy every plugin and exit
///   worker -> host   ready     ok bool; then the plugins created (count, then id and kind code
///                               each) and whether the slot is mapped (bool), or the reason loading failed
///                    result    request id u32, ok bool, then the op's answer (or a message)
///                    log       severity i32, verbosity i32, time ms i64, source, message
///   either way       wake      (no body): the other side published in the shared slot while this
///                               side slept (SharedCallSlot)
///
/// Calls are answered in order, one at a time per worker; log frames may come before a result
/// and are fed to the host's logging pipeline. With a shared slot, call and result payloads (type
/// byte first, as above) are published in the slot and go on the socket only when they do not fit.
enum FrameType: UInt8 {
    case hello = 0x01, call = 0x02, shutdown = 0x03, wake = 0x04
    case ready = 0x81, result = 0x82, log = 0x83
}
