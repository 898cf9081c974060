import ArgumentParser
import Foundation
import HarkEngine
import HarkSpool
import HarkSystem

/// `hark spool`: what harkd's spool holds, read from the file (harkd may be running: the file
/// is opened read-only and SQLite's write-ahead log lets both read).
struct SpoolCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spool",
        abstract: "List or export the records harkd's spool holds (pending delivery, delivered, or all).",
        discussion: """
        Without --json, one line per record: when it was made, its kind, its record id and, once \
        delivered, when. With --json, the records' JSON lines exactly as they were committed (and \
        sent), oldest first: an export another program can read.
        """)

    @Option(help: ArgumentHelp("The spool file (harkd's `spool` setting).", valueName: "path"), completion: .file())
    var spool = "/var/lib/hark/spool.sqlite"

    @Option(help: ArgumentHelp("Which records: pending, delivered or all.", valueName: "which"), completion: .list(["pending", "delivered", "all"]))
    var show: Spool.Which = .pending

    @Flag(help: "Export the records' JSON lines.")
    var json = false

    func run() throws {
        let store: Spool
        do {
            store = try Spool(path: spool, readOnly: true)
        } catch {
            Diagnostics.error("\(error)")
            throw ExitCode.failure
        }
        let records: [Spool.Record]
        do {
            records = try store.records(show)
        } catch {
            Diagnostics.error("\(error)")
            throw ExitCode.failure
        }
        let out = LineWriter.standardOutput
        for r in records {
            if json {
                try out.write(line: r.body)
            } else {
                let made = Self.time(r.created)
                let delivered = r.delivered.map { "delivered \(Self.time($0))" } ?? "pending"
                try out.write(line: "\(made)  \(r.kind.padding(toLength: 9, withPad: " ", startingAt: 0)) \(r.rid)  \(delivered)")
            }
        }
        if !json {
            try out.write(line: "\(records.count) \(show == .all ? "" : show.rawValue + " ")record(s) in \(spool)")
        }
    }

    private static func time(_ ms: Int64) -> String {
        UTCTime.iso8601(Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}

extension Spool.Which: ExpressibleByArgument {}
