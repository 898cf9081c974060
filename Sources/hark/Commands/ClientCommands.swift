import ArgumentParser
import Foundation
import HarkClient
import HarkEngine
import HarkPlot

/// `--socket` and `--json`, shared by the commands that talk to harkd.
struct DaemonOptions: ParsableArguments {
    @Option(help: ArgumentHelp("harkd's socket (default $HARK_SOCKET or /run/hark/hark.sock).", valueName: "path"), completion: .file())
    var socket: String?

    @Flag(help: "Print harkd's JSON lines as they come.")
    var json = false

    @Option(parsing: .unconditional, help: ArgumentHelp("Wait up to this long for harkd to listen (a harkd just started).", valueName: "s"))
    var wait = 0.0

    func validate() throws {
        guard wait.isFinite, (0...3_600).contains(wait) else { throw ValidationError("--wait must be 0 to 3600 seconds") }
    }

    func connect() throws -> HarkConnection {
        let path = socket ?? HarkConnection.defaultPath()
        let deadline = Date(timeIntervalSinceNow: wait)
        while true {
            do {
                return try HarkConnection(path: path)
            } catch {
                if Date() < deadline {
                    Thread.sleep(forTimeInterval: 0.1)
                    continue
                }
                Diagnostics.error(error.description)
                throw ExitCode.failure
            }
        }
    }
}

private func fmt(_ value: Any?, _ unit: String = " dB") -> String {
    guard let v = value as? Double else { return "–" }
    return String(format: "%.1f", v) + unit
}

/// Ends the command with one stderr line when harkd answers with an error or goes away.
private func check(_ object: [String: Any]) throws {
    if object["class"] as? String == "error" {
        Diagnostics.error("harkd: \(object["message"] as? String ?? "error")")
        throw ExitCode.failure
    }
}

/// The next message: the raw line (for --json) and its fields.
private func nextMessage(_ connection: HarkConnection) throws -> (line: String, object: [String: Any]) {
    do {
        if let m = try connection.readMessage() { return m }
        Diagnostics.error(ClientError.connectionLost.description)
    } catch {
        Diagnostics.error(error.description)
    }
    throw ExitCode.failure
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show harkd's state: capture, device, counters, clients.")
    @OptionGroup var daemon: DaemonOptions

    func run() throws {
        let c = try daemon.connect()
        try? c.send(["cmd": "status"])
        let (raw, s) = try nextMessage(c)
        try check(s)
        if daemon.json { try LineWriter.standardOutput.write(line: raw); return }
        var line = "harkd \(c.banner["release"] as? String ?? "?"): \(s["state"] as? String ?? "?"), device \(s["device"] as? String ?? "?")"
        if let rate = s["rate"] as? Double { line += ", \(Int(rate)) Hz" }
        line += ", mode \(s["mode"] as? String ?? "?")"
        line += String(format: ", up %.0f s", s["uptime"] as? Double ?? 0)
        line += ", \(s["clients"] as? Int ?? 0) client(s), \(s["sessions"] as? Int ?? 0) session(s)"
        line += ", \(s["overruns"] as? Int ?? 0) overrun(s), \(s["dropped"] as? Int ?? 0) frames dropped"
        if let detail = s["detail"] as? String { line += " (\(detail))" }
        try LineWriter.standardOutput.write(line: line)
        var spool = "spool \(s["spool"] as? String ?? "?")"
        if let pending = s["spoolPending"] as? Int {
            spool += ": \(pending) to deliver"
            if let age = s["spoolOldestAge"] as? Double { spool += String(format: " (oldest %.0f s old)", age) }
            spool += ", \(s["spoolDelivered"] as? Int ?? 0) delivered, \(s["spoolDropped"] as? Int ?? 0) dropped past the bound"
        }
        if let error = s["spoolError"] as? String { spool += " (\(error))" }
        spool += "; uplink \(s["uplink"] as? String ?? "?")"
        if let detail = s["uplinkDetail"] as? String { spool += " (\(detail))" }
        if let last = s["lastDelivery"] as? String { spool += ", last delivery \(last)" }
        try LineWriter.standardOutput.write(line: spool)
    }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print what harkd reports (detections, levels, reports, status) until interrupted.")
    @OptionGroup var daemon: DaemonOptions

    @Option(help: ArgumentHelp("Comma-separated classes: detection, level, report, status.", valueName: "list"))
    var classes = "detection,report,status"

    func run() throws {
        let wanted = classes.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let c = try daemon.connect()
        try? c.send(["cmd": "watch", "classes": wanted])
        while true {
            let (raw, o) = try nextMessage(c)
            try check(o)
            if daemon.json { try LineWriter.standardOutput.write(line: raw); continue }
            switch o["class"] as? String {
            case "detection":
                try LineWriter.standardOutput.write(line: "detection: payload \(o["payload"] as? String ?? "?") (score \(fmt(o["score"], "")))")
            case "level":
                try LineWriter.standardOutput.write(line: "level: LAF \(fmt(o["LAF"]))  LAS \(fmt(o["LAS"]))  LCpeak \(fmt(o["LCpeak"]))")
            case "report":
                try LineWriter.standardOutput.write(line: "report: LAeq \(fmt(o["LAeq"]))  LAFmax \(fmt(o["LAFmax"]))  LA90 \(fmt(o["LA90"])) over \(fmt(o["duration"], " s"))")
            case "status":
                try LineWriter.standardOutput.write(line: "status: \(o["state"] as? String ?? "?")\((o["detail"] as? String).map { " (\($0))" } ?? "")")
            default:
                break
            }
        }
    }
}

struct Shake: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask harkd to listen for a watermark.",
        discussion: "Prints the payload as soon as it is verified; exits 2 if none was heard in time, 1 on an error.")
    @OptionGroup var daemon: DaemonOptions

    @Option(parsing: .unconditional, help: ArgumentHelp("How long to listen.", valueName: "s"))
    var seconds = 6.0

    @Option(help: ArgumentHelp("""
        What must be heard: any (the mark or, with a campaign catalogue, the creative's own \
        sound) or mark (the watermark itself). Default: harkd's shake-evidence setting.
        """, valueName: "any|mark"))
    var evidence: String?

    func validate() throws {
        if let evidence, !["any", "mark"].contains(evidence) { throw ValidationError("--evidence must be any or mark, not '\(evidence)'") }
    }

    func run() throws {
        let c = try daemon.connect()
        var ask: [String: Any] = ["cmd": "shake", "seconds": seconds, "id": "hark-\(getpid())"]
        if let evidence { ask["evidence"] = evidence }
        try? c.send(ask)
        while true {
            let (raw, o) = try nextMessage(c)
            try check(o)
            guard o["class"] as? String == "shake" else { continue }
            if daemon.json { try LineWriter.standardOutput.write(line: raw) }
            if o["result"] as? String == "detected" {
                if !daemon.json {
                    let evidence = o["evidence"] as? String ?? "mark"
                    let reading = o["sound_evidence"].map { "learned, evidence \($0)" } ?? "\(o["sound_votes"] as? Int ?? 0) landmarks"
                    let how = evidence == "sound" ? "by the creative's sound, \(reading)"
                        : "\(evidence), confidence \(o["confidence"] as? Double ?? 0)"
                    try LineWriter.standardOutput.write(line: "payload \(o["payload"] as? String ?? "?") heard after \(fmt(o["after"], " s")) (\(how))")
                }
                return
            }
            if !daemon.json { try LineWriter.standardOutput.write(line: "no watermark heard in \(fmt(o["after"], " s"))") }
            for w in o["warnings"] as? [String] ?? [] { Diagnostics.warning(w) }
            throw ExitCode.nothingHeard
        }
    }
}

struct Noise: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the noise level through harkd, with a live display.",
        discussion: "Shows LAF, LAFmax so far and the last tenth of a second's LCpeak about ten times a second on a terminal, then the report.")
    @OptionGroup var daemon: DaemonOptions

    @Option(parsing: .unconditional, help: ArgumentHelp("How long to measure.", valueName: "s"))
    var seconds = 10.0

    @Option(help: ArgumentHelp("Also draw the session (LAF, LCpeak, then the report's statistics and spectrum) into this PNG or SVG, redrawn every second while it runs.", valueName: "path"), completion: .file())
    var plot: String?

    func validate() throws {
        if let plot, !(plot.lowercased().hasSuffix(".png") || plot.lowercased().hasSuffix(".svg")) {
            throw ValidationError("the picture's name must end in .png or .svg, not '\(plot)'")
        }
    }

    func run() throws {
        let c = try daemon.connect()
        try? c.send(["cmd": "noise", "seconds": seconds, "id": "hark-\(getpid())"])
        let out = LineWriter.standardOutput
        let live = out.isTerminal && !daemon.json
        var session = PlotLog(name: "harkd noise session"), drawn = 0.0, messages = 0
        func draw() throws {
            guard let plot else { return }
            var data = session.data
            if data.statistics.isEmpty { data.duration = max(data.duration, seconds) }
            do { try Plot.render(data, to: plot, width: 1200, height: 900) } catch {
                Diagnostics.error("\(error)")
                throw ExitCode.failure
            }
        }
        defer { if messages > 0 { try? draw() } }
        while true {
            let (raw, o) = try nextMessage(c)
            try check(o)
            if plot != nil, ["level", "report"].contains(o["class"] as? String ?? "") {
                session.add(o)
                messages += 1
                if let t = o["t"] as? Double, t - drawn >= 1 { drawn = t; try draw() }
            }
            if daemon.json {
                try out.write(line: raw)
                if o["class"] as? String == "report" { return }
                continue
            }
            switch o["class"] as? String {
            case "level" where live:
                let laf = o["LAF"] as? Double ?? 0
                let bar = String(repeating: "█", count: max(0, min(40, Int((laf - 30) / 2))))
                try out.write(raw: String(format: "\r\u{1B}[K%6.1f s  LAF %@  LAFmax %@  LCpeak %@  %@", o["t"] as? Double ?? 0,
                                          fmt(o["LAF"]), fmt(o["LAFmax"] ?? o["peak"]), fmt(o["LCpeak"]), bar))
            case "report":
                if live { try out.write(raw: "\r\u{1B}[K") }
                try out.write(line: "LAeq \(fmt(o["LAeq"]))  LAFmax \(fmt(o["LAFmax"]))  LAFmin \(fmt(o["LAFmin"]))  LCpeak \(fmt(o["LCpeak"]))  LA10 \(fmt(o["LA10"]))  LA90 \(fmt(o["LA90"]))  over \(fmt(o["duration"], " s"))")
                for w in o["warnings"] as? [String] ?? [] { Diagnostics.warning(w) }
                return
            default:
                break
            }
        }
    }
}
