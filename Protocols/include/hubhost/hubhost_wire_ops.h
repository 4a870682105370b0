/*
 * The operation codes of hubhost's isolation protocol: the byte a call request carries to name
 * the plugin function it is for, written once here for both ends of the wire.
 *
 * Internal to the host and its WebAssembly guest adapter, NOT part of the plugin ABI: a plugin
 * never includes this header, and hubhost.h (the umbrella plugins include) and hubhost.modulemap
 * leave it out. Its readers are the host's WorkerOp (Host/HubHostKit/Isolation/IsolatedCalls.swift,
 * which takes its codes from these constants through the HubHostABI module), so also the worker
 * processes of isolated plugins, and the guest adapter (Protocols/wasm/hubhost_wasm_guest.c, its
 * switch in hh_wasm_call).
 *
 * The guest adapter is compiled into every .wasm plugin, so a module built today is called by
 * later hosts: a code, once released, keeps its number. A new call takes the next unused number,
 * and the number of a call that is removed is not given to another.
 */
#ifndef HUBHOST_WIRE_OPS_H
#define HUBHOST_WIRE_OPS_H

enum {
    /* augmentation */
    HH_WIRE_OP_AUGMENT = 1,
    HH_WIRE_OP_PROCESS_SYNCHRONOUSLY = 2,
    HH_WIRE_OP_IS_SUPPLEMENTAL_DATA_READY = 3,
    /* trigger_operator */
    HH_WIRE_OP_OPERATOR_INFO = 4,
    HH_WIRE_OP_COMPARE = 5,
    /* logging */
    HH_WIRE_OP_LOG = 6,
    HH_WIRE_OP_FLUSH = 7,
    /* advertiser_id, location, content_provider */
    HH_WIRE_OP_ADVERTISER_ID = 8,
    HH_WIRE_OP_LOCATION = 9,
    HH_WIRE_OP_FETCH = 10,
    /* user_id_generator (ABI 1.1) */
    HH_WIRE_OP_USER_ID = 11,
    /* device_conditions, download_request (ABI 1.1) */
    HH_WIRE_OP_DEVICE_CONDITIONS = 12,
    HH_WIRE_OP_CONVERT_DOWNLOAD_REQUEST = 13,
    /* event_sink (ABI 1.1) */
    HH_WIRE_OP_DELIVER = 14
};

#endif /* HUBHOST_WIRE_OPS_H */
