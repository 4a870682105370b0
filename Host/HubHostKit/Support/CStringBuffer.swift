extension String {
    /// The text of a C buffer a C function filled (an OpenSSL error line, a benchmark client's
    /// error): up to its first NUL, or all of it when it has none; invalid UTF-8 is repaired.
    package init(filledBuffer buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
