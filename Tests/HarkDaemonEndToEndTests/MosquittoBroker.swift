import Foundation

/// A real Mosquitto broker on a free loopback port, with a password file, started by the test
/// (Debian's `mosquitto`), and a `mosquitto_sub` that records what it delivers.
final class MosquittoBroker: @unchecked Sendable {
    let dir: String
    let port: Int
    let tlsPort: Int?
    static let user = "hark", password = "s3cret word"
    static let subscriber = "reader", subscriberPassword = "reader pw"
    private var process: ChildProcess?

    /// - Parameter tls: CA-signed certificate and key for a TLS listener beside the plain one.
    init(dir: String, tls: (ca: String, cert: String, key: String)? = nil) throws {
        self.dir = dir
        port = Self.freePort()
        tlsPort = tls == nil ? nil : Self.freePort()
        let passwords = dir + "/passwords"
        precondition(FileManager.default.createFile(atPath: passwords, contents: nil), "cannot write \(passwords)")
        for (u, p) in [(Self.user, Self.password), (Self.subscriber, Self.subscriberPassword)] {
            try Self.run("/usr/bin/mosquitto_passwd", ["-b", passwords, u, p])
        }
        var config = """
            user root
            per_listener_settings false
            allow_anonymous false
            password_file \(passwords)
            persistence true
            persistence_location \(dir)/
            log_dest file \(dir)/mosquitto.log
            listener \(port) 127.0.0.1

            """
        if let tls, let tlsPort {
            config += "listener \(tlsPort) 127.0.0.1\ncafile \(tls.ca)\ncertfile \(tls.cert)\nkeyfile \(tls.key)\n"
        }
        try config.write(toFile: dir + "/mosquitto.conf", atomically: true, encoding: .utf8)
        try start()
    }

    deinit { stop() }

    func start() throws {
        process = try ChildProcess("/usr/sbin/mosquitto", ["-c", dir + "/mosquitto.conf"])
        let deadline = Date(timeIntervalSinceNow: 10)
        while Date() < deadline {
            if Self.accepts(port) { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw POSIXError(.ETIMEDOUT)
    }

    /// Stops the broker as an administrator would (it saves its persistent sessions).
    func stop() {
        process?.stop(SIGTERM)
        process = nil
    }

    var log: String { (try? String(contentsOfFile: dir + "/mosquitto.log", encoding: .utf8)) ?? "" }

    /// Subscribes to `hark/#` at QoS 1 with a persistent session; lines are "topic payload".
    func subscribe(name: String = "sub") throws -> Subscription {
        let s = Subscription(path: dir + "/\(name).out")
        s.process = try ChildProcess("/usr/bin/mosquitto_sub",
                                     ["-h", "127.0.0.1", "-p", "\(port)", "-u", Self.subscriber, "-P", Self.subscriberPassword,
                                      "-i", "hark-test-\(name)", "-c", "-q", "1", "-t", "hark/#", "-v"], output: s.path)
        // Subscribed once the broker lists the client.
        let deadline = Date(timeIntervalSinceNow: 10)
        while Date() < deadline, !log.contains("hark-test-\(name)") { Thread.sleep(forTimeInterval: 0.05) }
        Thread.sleep(forTimeInterval: 0.2)
        return s
    }

    final class Subscription: @unchecked Sendable {
        let path: String
        var process: ChildProcess?
        init(path: String) { self.path = path }
        deinit { process?.stop(SIGTERM) }

        /// (topic, payload) in the order delivered.
        var messages: [(topic: String, payload: String)] {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line -> (topic: String, payload: String)? in
                let parts = line.split(separator: " ", maxSplits: 1)
                guard parts.count == 2 else { return nil }
                return (String(parts[0]), String(parts[1]))
            }
        }

        /// The `rid`s of the messages on `topic`, in the order delivered.
        func rids(on topic: String) -> [String] {
            messages.filter { $0.topic == topic }.compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.payload.utf8)) as? [String: Any])?["rid"] as? String
            }
        }
    }

    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    static func run(_ tool: String, _ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw POSIXError(.EIO) }
    }

    /// A CA and a certificate it signed for 127.0.0.1 and localhost, made with openssl.
    static func makeCertificates(in dir: String, name: String) throws -> (ca: String, cert: String, key: String) {
        let ca = "\(dir)/\(name)-ca", server = "\(dir)/\(name)-server"
        try run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=\(name) test CA",
                                     "-keyout", ca + ".key", "-out", ca + ".crt"])
        try run("/usr/bin/openssl", ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                                     "-keyout", server + ".key", "-out", server + ".csr"])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(toFile: server + ".ext", atomically: true, encoding: .utf8)
        try run("/usr/bin/openssl", ["x509", "-req", "-in", server + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key", "-CAcreateserial",
                                     "-days", "2", "-extfile", server + ".ext", "-out", server + ".crt"])
        return (ca + ".crt", server + ".crt", server + ".key")
    }
}

/// A child process started with no signal blocked and default dispositions. Foundation's
/// `Process` passes on the signal mask of the thread that spawns it, and the test runner's
/// threads block SIGTERM: a broker started that way cannot be stopped as an administrator
/// would stop it.
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t

    init(_ path: String, _ arguments: [String], output: String = "/dev/null") throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child = pid_t()
        let rc = posix_spawn(&child, path, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EIO) }
        pid = child
    }

    private var reaped = false

    /// Sends `signal` and waits for the process to end.
    func stop(_ signal: Int32) {
        guard !reaped else { return }
        kill(pid, signal)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        reaped = true
    }

    deinit { stop(SIGKILL) }
}
