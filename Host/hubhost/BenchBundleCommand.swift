import ArgumentParser
import Foundation
import HubHostKit
import HubHostTools

extension BenchCommand {
    struct BundleBuild: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "bundle",
            abstract:
                "Content bundles: `bundle build` of a generated folder of Markdown articles in articles/s, beside cmark-gfm's own render of the same texts.",
            discussion: """
                Writes 10 hubs of 10 channels holding --articles Markdown articles (about 2.5 KB each: headings, \
                wrapped paragraphs with emphasis and links, lists, a task list, a table, code, a quote, an image), builds \
                the bundle (reading, front matter, rendering, SQLite), then renders the same texts with hubhost's \
                MarkdownRenderer alone and with cmark-gfm alone (same options and extensions: the yardstick).
                """)

        @Option(parsing: .unconditional, help: "Articles in the generated folder.")
        var articles: Int = 10_000

        @Option(parsing: .unconditional, help: "Rounds; the best round of each is reported.")
        var rounds: Int = 3

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard articles > 0, rounds > 0 else { throw ValidationError("--articles and --rounds must be positive") }
        }

        func run() throws {
            let result = try BundleBuildBenchmark(articles: articles, rounds: rounds).run { step in
                if !output.json { Output.error("bench bundle: \(step)") }
            }
            if output.json {
                Output.json(result)
                return
            }
            let megabytes = Double(result.markdownBytes) / 1e6
            print(String(format: "%d articles, %.1f MB of Markdown, best of %d rounds:", result.articles, megabytes, result.rounds))
            Output.table(
                ["", "articles/s", "MB/s"],
                [
                    [
                        "bundle build (read, front matter, render, write SQLite)", String(format: "%.0f", result.buildArticlesPerSecond),
                        String(format: "%.1f", megabytes / (Double(result.articles) / result.buildArticlesPerSecond))
                    ],
                    [
                        "MarkdownRenderer alone (scan, cmark-gfm, hubhost's pass)", String(format: "%.0f", result.rendererArticlesPerSecond),
                        String(format: "%.1f", megabytes / (Double(result.articles) / result.rendererArticlesPerSecond))
                    ],
                    [
                        "cmark-gfm alone, same texts and extensions (yardstick)", String(format: "%.0f", result.cmarkArticlesPerSecond),
                        String(format: "%.1f", megabytes / (Double(result.articles) / result.cmarkArticlesPerSecond))
                    ]
                ])
            print(String(format: "bundle build / cmark-gfm alone: %.2f", result.buildToCmark))
        }
    }
}
