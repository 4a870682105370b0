import CYaml
import Foundation

/// Limits a YAML document must meet before anything builds or walks its tree: its size, and how
/// many nodes it stands for once every alias is expanded. An alias names a whole subtree, so a few
/// hundred bytes of nested aliases ("a billion laughs") stand for billions of nodes; comparing keys
/// for duplicates, or converting the document to values, walks every one of them and never ends.
/// The check is one pass over libyaml's events (the parser Yams itself uses), counting each alias
/// as the nodes of its anchor, and stops as soon as the count passes the limit.
package enum YAMLLimits {
    /// The largest YAML file hubhost reads (plugins.yaml, a plugin.yaml, a bundle's front matter).
    package static let maxBytes = 4 << 20
    /// The most nodes a document may stand for, aliases expanded.
    package static let maxExpandedNodes = 1_000_000

    /// Why `text` may not be parsed, or nil when it is within the limits. A document libyaml cannot
    /// parse is left to the caller's parser, which reports it with its position.
    package static func problem(_ text: String, maxBytes: Int = YAMLLimits.maxBytes, maxExpandedNodes: Int = YAMLLimits.maxExpandedNodes)
        -> String?
    {
        let bytes = Array(text.utf8)
        guard bytes.count <= maxBytes else {
            return "the file is \(bytes.count) bytes, more than the \(maxBytes >> 20) MiB a YAML file may be"
        }
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return nil }
        defer { yaml_parser_delete(&parser) }
        return bytes.withUnsafeBufferPointer { buffer -> String? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            /// Nodes of each anchor, aliases inside it expanded (the latest anchor of a name wins, as in YAML).
            var anchors: [String: Int] = [:]
            /// The open collections: their anchor and their nodes so far.
            var open: [(anchor: String?, nodes: Int)] = []
            var total = 0
            /// Adds a finished node of `nodes` to its parent; false past the limit.
            func add(_ nodes: Int) -> Bool {
                if open.isEmpty {
                    total = total.addingReportingOverflow(nodes).partialValue
                    return total <= maxExpandedNodes
                }
                let (sum, overflow) = open[open.count - 1].nodes.addingReportingOverflow(nodes)
                open[open.count - 1].nodes = overflow ? Int.max : sum
                return !overflow && sum <= maxExpandedNodes
            }
            func name(_ anchor: UnsafeMutablePointer<yaml_char_t>?) -> String? { anchor.map { String(cString: $0) } }
            let refusal =
                "aliases make the document stand for more than \(maxExpandedNodes) nodes (an alias counts as every node of its anchor); write the values out, or use fewer nested aliases"
            var event = yaml_event_t()
            while true {  // bounded: each event consumes input, and the input is at most maxBytes
                guard yaml_parser_parse(&parser, &event) == 1 else { return nil }
                defer { yaml_event_delete(&event) }
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return nil
                case YAML_SCALAR_EVENT:
                    if let anchor = name(event.data.scalar.anchor) { anchors[anchor] = 1 }
                    if !add(1) { return refusal }
                case YAML_ALIAS_EVENT:
                    let nodes = name(event.data.alias.anchor).flatMap { anchors[$0] } ?? 1
                    if !add(nodes) { return refusal }
                case YAML_SEQUENCE_START_EVENT:
                    open.append((name(event.data.sequence_start.anchor), 1))
                case YAML_MAPPING_START_EVENT:
                    open.append((name(event.data.mapping_start.anchor), 1))
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    guard let closed = open.popLast() else { return nil }
                    if let anchor = closed.anchor { anchors[anchor] = closed.nodes }
                    if !add(closed.nodes) { return refusal }
                case YAML_DOCUMENT_END_EVENT:
                    total = 0  // each document of a stream is counted on its own
                default:
                    break
                }
            }
        }
    }
}
