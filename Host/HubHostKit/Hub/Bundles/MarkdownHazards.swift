import Foundation

/// The inputs Debian's cmark-gfm 0.29.0.gfm.6 takes more than linear time on, found before it
/// parses them. cmark's own pathological inputs (deep nesting, unclosed links and emphasis runs,
/// backticks, `<!--`) are linear in it; these four are not (fixed upstream in 0.29.0.gfm.7-.13,
/// which Debian 12 does not ship), each quadratic in something no real article has many of:
///
/// - images left open before links in one paragraph (`![[]()` repeated): each link walks back over
///   the open `![` before it. Counted as the open `![` at each `]`, per run of lines between blank
///   lines; refused above 32 per byte of the run plus 100,000;
/// - GitHub autolinks: `www.` after `_` inside one word of letters, digits, `.`, `_` and `-`
///   (`www.a_www.a_...`): each is checked to the end of the word. Refused above 16 in a word;
/// - table rows with many cells: refused above 256 `|` on a line;
/// - tables whose rows are padded to the header's width (a 256-column header over thousands of
///   one-character rows): refused when header columns × rows exceed 4 per byte of the table plus 65,536.
///
/// The scan is one pass over the bytes (fenced code blocks are skipped: cmark does not parse them),
/// so with these refused, rendering any article is linear in its length.
package struct MarkdownHazard: Equatable, Sendable, CustomStringConvertible {
    /// The line (1 = the first line of the text scanned).
    package var line: Int
    package var message: String
    package var description: String { "line \(line): \(message)" }
}

enum MarkdownHazards {
    static let bracketWorkPerByte = 32, bracketWorkSlack = 100_000
    static let wwwAfterUnderscorePerWord = 16
    static let pipesPerLine = 256
    static let paddedCellsPerByte = 4, paddedCellsSlack = 65_536

    /// Every hazard in `markdown`, in one pass over its bytes. Long on purpose: one loop whose
    /// counters (brackets open, pipes on the line, padded cells) each hazard's check reads; split,
    /// the counters would become a state passed to every part.
    static func scan(_ markdown: String) -> [MarkdownHazard] {
        var hazards: [MarkdownHazard] = []
        var bytes = Array(markdown.utf8)
        bytes.append(UInt8(ascii: "\n"))
        // A run of lines between blank lines (a paragraph at most).
        var runStart = 1
        var runBytes = 0
        var bracketWork = 0
        var brackets: [Bool] = []
        var openImages = 0  // the open '[' (true: an image's '![')
        // The table being read: its first line, columns, rows and bytes.
        var table: (line: Int, columns: Int, rows: Int, bytes: Int)?
        var previousLine: (start: Int, end: Int, pipes: Int)?
        var fence: (character: UInt8, length: Int)?
        var lineNumber = 0
        var lineStart = 0

        func endRun() {
            if bracketWork > bracketWorkPerByte * runBytes + bracketWorkSlack {
                hazards.append(
                    .init(
                        line: runStart,
                        message:
                            "the paragraph starting here leaves too many '[' or '![' open before links (cmark-gfm 0.29.0.gfm.6 takes quadratic time on it); close or escape them (\\[)"
                    ))
            }
            runBytes = 0
            bracketWork = 0
            brackets.removeAll(keepingCapacity: true)
            openImages = 0
        }
        func endTable() {
            if let t = table, t.columns * t.rows > paddedCellsPerByte * t.bytes + paddedCellsSlack {
                hazards.append(
                    .init(
                        line: t.line,
                        message:
                            "the table starting here has \(t.columns) columns and \(t.rows) rows, most of them short: padding them takes cmark-gfm 0.29.0.gfm.6 too long; give the rows their cells or use fewer columns"
                    ))
            }
            table = nil
        }

        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
            lineNumber += 1
            let line = bytes[lineStart..<index]
            defer { lineStart = index + 1 }
            let content = line.last == UInt8(ascii: "\r") ? line.dropLast() : line
            let indent = content.prefix { $0 == 0x20 }.count
            let trimmed = content.dropFirst(min(indent, 3))
            // Fenced code: cmark does not parse inside it.
            if indent < 4, let marker = trimmed.first, marker == UInt8(ascii: "`") || marker == UInt8(ascii: "~") {
                let length = trimmed.prefix { $0 == marker }.count
                if length >= 3 {
                    if let open = fence {
                        if open.character == marker, length >= open.length, trimmed.dropFirst(length).allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                            fence = nil
                        }
                        continue
                    } else if marker == UInt8(ascii: "~") || !trimmed.dropFirst(length).contains(UInt8(ascii: "`")) {
                        endTable()
                        endRun()
                        fence = (marker, length)
                        previousLine = nil
                        continue
                    }
                }
            }
            if fence != nil { continue }
            if content.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                endTable()
                endRun()
                runStart = lineNumber + 1
                previousLine = nil
                continue
            }
            runBytes += content.count + 1

            // One pass over the line: pipes, brackets, and `www.` after `_` in a word.
            var pipes = 0
            var wwwInWord = 0
            var reportedWord = false
            var i = content.startIndex
            while i < content.endIndex {
                let c = content[i]
                switch c {
                case UInt8(ascii: "\\"):
                    i = content.index(after: i)  // the escaped character is not syntax
                case UInt8(ascii: "|"): pipes += 1
                case UInt8(ascii: "["):
                    let image = i > content.startIndex && content[content.index(before: i)] == UInt8(ascii: "!")
                    brackets.append(image)
                    if image { openImages += 1 }
                case UInt8(ascii: "]"):
                    // A link formed here walks back over the open images (link openers end the walk).
                    bracketWork += openImages
                    if let image = brackets.popLast(), image { openImages -= 1 }
                case UInt8(ascii: "_"):
                    if content[i...].starts(with: [UInt8(ascii: "_"), UInt8(ascii: "w"), UInt8(ascii: "w"), UInt8(ascii: "w"), UInt8(ascii: ".")]) {
                        wwwInWord += 1
                        if wwwInWord > wwwAfterUnderscorePerWord, !reportedWord {
                            reportedWord = true
                            hazards.append(
                                .init(
                                    line: lineNumber,
                                    message:
                                        "a word with more than \(wwwAfterUnderscorePerWord) 'www.' after '_' (GitHub autolinks take cmark-gfm 0.29.0.gfm.6 quadratic time on it); put spaces or code spans in it"
                                ))
                        }
                    }
                default:
                    let isWordByte =
                        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
                        || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: ".") || c == UInt8(ascii: "-") || c >= 0x80
                    if !isWordByte {
                        wwwInWord = 0
                        reportedWord = false
                    }
                }
                if i < content.endIndex { i = content.index(after: i) }
            }
            if pipes > pipesPerLine {
                hazards.append(
                    .init(
                        line: lineNumber,
                        message:
                            "\(pipes) '|' on one line: table rows may have at most \(pipesPerLine) cells here (cmark-gfm 0.29.0.gfm.6 takes quadratic time on wider rows); escape them (\\|) or split the table"
                    ))
            }

            // Tables: a delimiter row under a line with pipes starts one; rows follow to a blank line.
            if table != nil {
                table!.rows += 1
                table!.bytes += content.count + 1
            } else if let previous = previousLine, previous.pipes > 0, isDelimiterRow(trimmed) {
                table = (
                    lineNumber - 1, max(1, trimmed.split(separator: UInt8(ascii: "|")).filter { $0.contains(UInt8(ascii: "-")) }.count),
                    0, previous.end - previous.start + content.count + 2
                )
            }
            previousLine = (lineStart, index, pipes)
        }
        endTable()
        endRun()
        return hazards
    }

    /// `| :-- | --: |`: pipes, colons, dashes and spaces, with a dash.
    private static func isDelimiterRow(_ line: ArraySlice<UInt8>) -> Bool {
        line.contains(UInt8(ascii: "-"))
            && line.allSatisfy {
                $0 == UInt8(ascii: "|") || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "-") || $0 == 0x20 || $0 == 0x09 || $0 == UInt8(ascii: "\r")
            }
    }
}
