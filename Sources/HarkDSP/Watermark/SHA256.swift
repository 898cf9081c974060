/// SHA-256 (FIPS 180-4), for deriving the watermark pattern from a secret key.
///
/// A small self-contained implementation: the pattern must be unpredictable without the key
/// and identical on every platform, and this avoids a cryptography dependency for one hash.
struct SHA256 {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    /// The 32-byte digest of `message`.
    static func hash(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
        var data = message
        let bitLength = UInt64(message.count) * 8
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        for i in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(i))) }
        var w = [UInt32](repeating: 0, count: 64)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for i in 0..<16 {
                let b = chunk + 4 * i
                w[i] = UInt32(data[b]) << 24 | UInt32(data[b + 1]) << 16 | UInt32(data[b + 2]) << 8 | UInt32(data[b + 3])
            }
            for i in 16..<64 {
                let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, hh) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
            for i in 0..<64 {
                let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                let ch = (e & f) ^ (~e & g)
                let t1 = hh &+ s1 &+ ch &+ k[i] &+ w[i]
                let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                let maj = (a & b) ^ (a & c) ^ (b & c)
                let t2 = s0 &+ maj
                (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
            }
            h[0] &+= a; h[1] &+= b; h[2] &+= c; h[3] &+= d; h[4] &+= e; h[5] &+= f; h[6] &+= g; h[7] &+= hh
        }
        return h.flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32($0))) } }
    }

    /// HMAC-SHA-256 (RFC 2104) of `message` under `key`: what the airing code signs with
    /// (``AiringCode``).
    static func hmac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        let block = 64
        var k = key.count > block ? hash(key) : key
        k += [UInt8](repeating: 0, count: block - k.count)
        let inner = hash(k.map { $0 ^ 0x36 } + message)
        return hash(k.map { $0 ^ 0x5c } + inner)
    }

    @inline(__always)
    private static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
}

/// An endless stream of pseudo-random numbers derived from a key and a purpose label:
/// SHA-256(key ‖ label ‖ counter), 32 bytes at a time. Public for the format's studies, which
/// draw their tones the way the format on air draws its own.
public struct KeyedStream {
    private let prefix: [UInt8]
    private var counter: UInt64 = 0
    private var buffer: [UInt8] = []

    public init(key: [UInt8], label: String) {
        prefix = Array("hark-watermark-v1".utf8) + [0] + key + [0] + Array(label.utf8) + [0]
    }

    mutating func nextUInt64() -> UInt64 {
        if buffer.count < 8 {
            var c = counter
            buffer += SHA256.hash(prefix + withUnsafeBytes(of: &c) { Array($0) })
            counter += 1
        }
        let v = buffer.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        buffer.removeFirst(8)
        return v
    }

    /// Uniform in 0..<n, without modulo bias.
    mutating func next(below n: Int) -> Int {
        precondition(n > 0)
        let bound = UInt64(n)
        let limit = UInt64.max - UInt64.max % bound
        while true {
            let v = nextUInt64()
            if v < limit { return Int(v % bound) }
        }
    }

    /// Uniform in [0, 1).
    public mutating func nextUnit() -> Double { Double(nextUInt64() >> 11) * 0x1.0p-53 }

    /// A uniformly random permutation of 0..<n (Fisher–Yates).
    public mutating func permutation(_ n: Int) -> [Int] {
        var p = Array(0..<n)
        for i in stride(from: n - 1, to: 0, by: -1) { p.swapAt(i, next(below: i + 1)) }
        return p
    }
}
